package webapp

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
)

// Limits the operator checks beyond the CRD schema.
const (
	// MaxContentBytes is the largest Content, in bytes, the operator puts
	// into a ConfigMap (which holds at most 1 MiB). The schema limits
	// characters, not bytes.
	MaxContentBytes = 512 * 1024
	// MaxReplicas mirrors the schema's maximum, for API servers that run
	// without it (an old CRD, or a CRD installed by hand).
	MaxReplicas = 100
)

// ErrInvalidSpec is wrapped by errors about a WebApp the operator cannot
// use. Such errors are permanent: the operator reports them in the Ready
// and Stalled conditions, with reason ReasonInvalidSpec, and a Warning
// Event, and does not retry them with backoff: the WebApp runs again when it
// changes, or at the informer's periodic resync.
var ErrInvalidSpec = errors.New("invalid spec")

// ReasonInvalidSpec is the reason of the Ready (False) and Stalled (True)
// conditions of a WebApp whose spec the operator cannot use.
const ReasonInvalidSpec = "InvalidSpec"

// imageRef is a simplified form of the container image reference grammar:
// an optional registry host (with port) and path, lower-case path
// components, an optional tag and an optional sha256 digest.
var imageRef = regexp.MustCompile(`^` +
	`(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?/)?` +
	`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*` +
	`(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` +
	`(?::[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,127})?` +
	`(?:@sha256:[a-f0-9]{64})?$`)

// Validate reports whether the operator can use w: its name must be a
// DNS-1035 label (it names the Service and is a label value), the image a
// well-formed reference, replicas within 0..MaxReplicas (nil means 1) and
// the content at most MaxContentBytes. The error wraps ErrInvalidSpec and
// lists every problem; it is permanent (retry.Permanent: not retried with
// backoff, only when the WebApp changes or at the resync) and gives the Ready and Stalled conditions the
// reason ReasonInvalidSpec (conditioncontext.WithReason). It is nil when w
// is usable.
func Validate(w *v1alpha1.WebApp) error {
	if w == nil {
		return retry.Permanent(fmt.Errorf("%w: no object", ErrInvalidSpec))
	}
	var problems []string
	if errs := validation.IsDNS1035Label(w.Name); len(errs) > 0 {
		problems = append(problems, fmt.Sprintf("metadata.name %q cannot name a Service: %s", w.Name, strings.Join(errs, "; ")))
	}
	switch {
	case w.Spec.Image == "":
		problems = append(problems, "spec.image must not be empty")
	case len(w.Spec.Image) > 512 || !imageRef.MatchString(w.Spec.Image):
		problems = append(problems, fmt.Sprintf("spec.image %.80q is not a valid image reference", w.Spec.Image))
	}
	if r := w.Spec.Replicas; r != nil && (*r < 0 || *r > MaxReplicas) {
		problems = append(problems, fmt.Sprintf("spec.replicas %d is not within 0..%d", *r, MaxReplicas))
	}
	if n := len(w.Spec.Content); n > MaxContentBytes {
		problems = append(problems, fmt.Sprintf("spec.content has %d bytes, more than %d", n, MaxContentBytes))
	}
	if len(problems) == 0 {
		return nil
	}
	return retry.Permanent(conditioncontext.WithReason(fmt.Errorf("%w: %s", ErrInvalidSpec, strings.Join(problems, "; ")), ReasonInvalidSpec))
}
