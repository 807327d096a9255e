package integration

// The operator of TestCertificateOperator, written from the docs alone
// (README.md, docs/*.md, the packages' doc.go and godoc): a Certificate
// keeps a Secret of type kubernetes.io/tls holding a self-signed ECDSA
// certificate for spec.dnsNames, kept while it is valid and matches the
// spec, renewed when it enters the spec.renewBefore window (the operator
// asks to be woken at that moment: requeuecontext, no polling), issued again
// at once when the dnsNames change or someone deletes the Secret or edits
// its data, and rolls the pods of a Deployment it does not own (named by
// spec.deploymentName) with the Secret's checksum in their template.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/requeuecontext"
	"github.com/operatorkit/operatorkit/context/statuscontext"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
	"github.com/operatorkit/operatorkit/router"
)

// ---- the operator (counted: see the report of this newcomer) ----

const (
	certificateOperator = "certificate-operator"
	// certChecksumAnnotation is on the pod template of spec.deploymentName:
	// a new certificate changes it, and so rolls the pods.
	certChecksumAnnotation = "certificate.example.com/secret-checksum"
	// conditionRenewal says when the certificate will be renewed.
	conditionRenewal = "RenewalScheduled"
)

// Certificate asks for a Secret holding a self-signed certificate.
type Certificate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              CertificateSpec   `json:"spec"`
	Status            CertificateStatus `json:"status,omitempty"`
}

// CertificateSpec is the desired state of a Certificate.
type CertificateSpec struct {
	DNSNames    []string        `json:"dnsNames"`
	Duration    metav1.Duration `json:"duration"`
	RenewBefore metav1.Duration `json:"renewBefore"`
	SecretName  string          `json:"secretName"`
	// DeploymentName, when set, names a Deployment (not the operator's)
	// whose pods roll when the certificate changes.
	DeploymentName string `json:"deploymentName,omitempty"`
}

// CertificateStatus is written by the Framework, in one apply.
type CertificateStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	NotAfter           *metav1.Time       `json:"notAfter,omitempty"`
	RenewalTime        *metav1.Time       `json:"renewalTime,omitempty"`
	SerialNumber       string             `json:"serialNumber,omitempty"`
	// AnnotatedDeployment is the Deployment whose pod template carries
	// the checksum: the one to clean when spec.deploymentName changes.
	AnnotatedDeployment string `json:"annotatedDeployment,omitempty"`
}

// DeepCopyObject is what controller-gen would write.
func (c *Certificate) DeepCopyObject() runtime.Object {
	out := *c
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.DNSNames = slices.Clone(c.Spec.DNSNames)
	out.Status.Conditions = slices.Clone(c.Status.Conditions)
	out.Status.NotAfter, out.Status.RenewalTime = c.Status.NotAfter.DeepCopy(), c.Status.RenewalTime.DeepCopy()
	return &out
}

// certificateCRD is the Certificate CRD in group, as controller-gen writes it.
func certificateCRD(group string) *apiextensionsv1.CustomResourceDefinition {
	crd := backupCRD(group)
	crd.Name = "certificates." + group
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: "certificates", Kind: "Certificate"}
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties
	props["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"dnsNames", "duration", "renewBefore", "secretName"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"dnsNames": {Type: "array", MinItems: ptr(int64(1)), Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}},
			"duration": str, "renewBefore": str, "secretName": str, "deploymentName": str,
		}}
	for _, f := range []string{"notAfter", "renewalTime", "serialNumber", "annotatedDeployment"} {
		props["status"].Properties[f] = str
	}
	return crd
}

// runCertificateOperator runs the operator for namespace ns until the test
// ends, installing the CRD first; resync is the Certificates' informer's
// ResyncPeriod.
func runCertificateOperator(t *testing.T, config operatorpkg.Config, ns string, crd *apiextensionsv1.CustomResourceDefinition, resync time.Duration) {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	op, err := operatorpkg.New(config)
	must(t, err)
	certificates, err := op.Informer(informer.Config{GVR: gvr, ObjectType: &Certificate{}, Namespace: ns, ResyncPeriod: resync})
	must(t, err)
	secrets, err := op.Informer(informer.Config{GVR: corev1.SchemeGroupVersion.WithResource("secrets"), ObjectType: &corev1.Secret{},
		Namespace: ns, LabelSelector: child.LabelManagedBy + "=" + certificateOperator})
	must(t, err)
	// The Deployments are the users': not label-filtered.
	deployments, err := op.Informer(informer.Config{GVR: appsv1.SchemeGroupVersion.WithResource("deployments"), ObjectType: &appsv1.Deployment{}, Namespace: ns})
	must(t, err)

	secret, err := child.New(child.Config[*Certificate, *corev1.Secret]{
		Name: "secret", Client: child.Typed(op.Kubernetes().CoreV1().Secrets), Cache: secrets,
		FieldManager: certificateOperator, Writes: op.OwnWrites(),
		Desired: func(_ context.Context, c *Certificate) (*corev1.Secret, error) {
			if c.Spec.RenewBefore.Duration >= c.Spec.Duration.Duration { // every certificate due at once: a new one per reconciliation
				return nil, retry.Permanent(conditioncontext.WithReason(fmt.Errorf("renewBefore %s is not shorter than duration %s", c.Spec.RenewBefore.Duration, c.Spec.Duration.Duration), "InvalidSpec"))
			}
			// The current Secret decides: kept while valid, else a new key.
			current, _, err := informer.Get[*corev1.Secret](secrets, c.Namespace, c.Spec.SecretName)
			if err != nil {
				return nil, err
			}
			data := map[string][]byte{}
			if current != nil && currentCertificate(c, current, time.Now()) != nil {
				data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey] = current.Data[corev1.TLSCertKey], current.Data[corev1.TLSPrivateKeyKey]
			} else if data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey], err = issueCertificate(c, time.Now()); err != nil {
				return nil, err
			}
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: c.Spec.SecretName}, Type: corev1.SecretTypeTLS, Data: data}, nil
		},
	})
	must(t, err)
	status := &certificateStatus{secrets: secrets}
	rollout := &certificateRollout{deployments: deployments, secrets: secrets, op: op}
	rtr, err := router.Single("v1", secret, status, rollout)
	must(t, err)
	f, err := op.NewFramework(framework.Config{Name: certificateOperator, Informer: certificates, ResourceRouter: rtr, Resource: gvr, Conditions: true, CRD: crd})
	must(t, err)
	must(t, op.Owns(f, schema.GroupKind{Group: gvr.Group, Kind: "Certificate"}, secrets))
	// A Certificate refers to its Deployment: its creation, or an edit of
	// the annotation, wakes the Certificate.
	must(t, op.References(f, deployments, func(obj any) []string {
		c := obj.(*Certificate)
		return []string{c.Namespace + "/" + c.Spec.DeploymentName, c.Namespace + "/" + c.Status.AnnotatedDeployment}
	}))
	stop, _ := runOperator(op)
	t.Cleanup(func() { must(t, stop()) })
}

// currentCertificate returns the certificate of s when it is one that c
// keeps at now: a certificate and its key that parse and match, for c's
// dnsNames, and not yet in its renewBefore window. It returns nil for any
// other.
func currentCertificate(c *Certificate, s *corev1.Secret, now time.Time) *x509.Certificate {
	cert, err := parseCertificate(s)
	if err != nil || !slices.Equal(sortedCopy(cert.DNSNames), sortedCopy(c.Spec.DNSNames)) || !now.Before(renewalTime(c, cert)) {
		return nil
	}
	block, _ := pem.Decode(s.Data[corev1.TLSPrivateKeyKey])
	if block == nil {
		return nil
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil || !key.PublicKey.Equal(cert.PublicKey) {
		return nil
	}
	return cert
}

func parseCertificate(s *corev1.Secret) (*x509.Certificate, error) {
	block, _ := pem.Decode(s.Data[corev1.TLSCertKey])
	if block == nil {
		return nil, fmt.Errorf("secret %s/%s: no PEM certificate", s.Namespace, s.Name)
	}
	return x509.ParseCertificate(block.Bytes)
}

func sortedCopy(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// renewalTime is when cert enters c's renewBefore window.
func renewalTime(c *Certificate, cert *x509.Certificate) time.Time {
	return cert.NotAfter.Add(-c.Spec.RenewBefore.Duration)
}

// issueCertificate returns a new self-signed certificate for c's dnsNames,
// valid from now for c's duration, and its key, in PEM.
func issueCertificate(c *Certificate, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: c.Spec.DNSNames[0]}, DNSNames: c.Spec.DNSNames,
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(c.Spec.Duration.Duration),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// certificateStatus sets status.notAfter, renewalTime and serialNumber from
// the Secret the chain keeps, the condition saying when it renews, and asks
// to be woken then.
type certificateStatus struct {
	secrets *operatorpkg.SharedInformer
}

func (r *certificateStatus) Name() string { return "status" }

func (r *certificateStatus) EnsureCreated(ctx context.Context, obj any) error {
	c := obj.(*Certificate)
	s, ok, err := informer.Get[*corev1.Secret](r.secrets, c.Namespace, c.Spec.SecretName)
	if err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("secret %s/%s not in the cache", c.Namespace, c.Spec.SecretName)
	}
	cert, err := parseCertificate(s)
	if err != nil {
		return err
	}
	renew := renewalTime(c, cert)
	statuscontext.Set(ctx, "notAfter", metav1.NewTime(cert.NotAfter))
	statuscontext.Set(ctx, "renewalTime", metav1.NewTime(renew))
	statuscontext.Set(ctx, "serialNumber", cert.SerialNumber.Text(16))
	conditioncontext.Set(ctx, conditionRenewal, metav1.ConditionTrue, "Scheduled", "renews at "+renew.UTC().Format(time.RFC3339))
	requeuecontext.SetRequeueAfter(ctx, time.Until(renew))
	return nil
}

func (r *certificateStatus) EnsureDeleted(context.Context, any) error { return nil }

// certificateRollout keeps the Secret's checksum in the pod template of
// spec.deploymentName, a Deployment the operator does not own: a
// server-side apply of that annotation alone, under the operator's field
// manager, which owns that one field. An apply of nothing under the same
// manager gives the field up, which removes it (when the Certificate is
// deleted, or names another Deployment).
type certificateRollout struct {
	deployments, secrets *operatorpkg.SharedInformer
	op                   *operatorpkg.Operator
}

func (r *certificateRollout) Name() string { return "rollout" }

func (r *certificateRollout) EnsureCreated(ctx context.Context, obj any) error {
	c := obj.(*Certificate)
	if old := c.Status.AnnotatedDeployment; old != "" && old != c.Spec.DeploymentName {
		if err := r.annotate(ctx, c.Namespace, old, ""); err != nil {
			return err
		}
	}
	if c.Spec.DeploymentName == "" {
		statuscontext.Set(ctx, "annotatedDeployment", nil)
		return nil
	}
	s, _, err := informer.Get[*corev1.Secret](r.secrets, c.Namespace, c.Spec.SecretName)
	if err != nil {
		return err
	}
	sum, err := child.Checksum(s)
	if err != nil {
		return err
	}
	if err := r.annotate(ctx, c.Namespace, c.Spec.DeploymentName, sum); err != nil {
		return err
	}
	statuscontext.Set(ctx, "annotatedDeployment", c.Spec.DeploymentName)
	return nil
}

func (r *certificateRollout) EnsureDeleted(ctx context.Context, obj any) error {
	c := obj.(*Certificate)
	for _, name := range []string{c.Status.AnnotatedDeployment, c.Spec.DeploymentName} {
		if err := r.annotate(ctx, c.Namespace, name, ""); err != nil {
			return err
		}
	}
	return nil
}

// annotate applies sum as the annotation of the Deployment ns/name's pod
// template, or gives the annotation up when sum is empty; a Deployment the
// cache does not hold, or that has the annotation as wanted, is not written.
func (r *certificateRollout) annotate(ctx context.Context, ns, name, sum string) error {
	if name == "" {
		return nil
	}
	d, ok, err := informer.Get[*appsv1.Deployment](r.deployments, ns, name)
	if err != nil || !ok {
		return err
	}
	have, owned := d.Spec.Template.Annotations[certChecksumAnnotation]
	if have == sum && (owned || sum == "") {
		return nil
	}
	apply := appsv1ac.Deployment(name, ns)
	if sum != "" {
		apply.WithSpec(appsv1ac.DeploymentSpec().WithTemplate(corev1ac.PodTemplateSpec().WithAnnotations(map[string]string{certChecksumAnnotation: sum})))
	}
	done := r.op.OwnWrites().Begin(appsv1.Resource("deployments"), ns, name)
	answer, err := r.op.Kubernetes().AppsV1().Deployments(ns).Apply(ctx, apply, metav1.ApplyOptions{FieldManager: certificateOperator, Force: true})
	if err != nil {
		done(nil, err)
		return err
	}
	done(answer, nil)
	r.deployments.Mutation(answer)
	return nil
}
