package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/example/internal/cli"
	"github.com/operatorkit/operatorkit/example/webapp"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/router"
)

const planUsage = `usage: webapp-operator plan [flags] (namespace/name... | --all)

Prints, for each WebApp, the create, update and delete changes the operator
would make now, under the release its label routes it to or under --release.
Reads the cluster; changes nothing. Flags:`

type planFlags struct {
	commonFlags
	release string
	all     bool
}

func runPlan(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f planFlags
	fs := flag.NewFlagSet(cmdName+" plan", flag.ContinueOnError)
	f.register(fs)
	fs.StringVar(&f.release, "release", "", "plan under this release ("+strings.Join(webapp.Releases, " or ")+") instead of the one each object's label routes it to")
	fs.BoolVar(&f.all, "all", false, "plan every WebApp (in --namespace, or in all namespaces)")
	if err := parse(fs, args, planUsage, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return 0
		}
		return cli.Fail(stderr, cmdName+" plan", 2, err)
	}
	if err := f.validate(); err != nil {
		return cli.Fail(stderr, cmdName+" plan", 2, err)
	}
	if f.release != "" && !slices.Contains(webapp.Releases, f.release) {
		return cli.Fail(stderr, cmdName+" plan", 2, fmt.Errorf("invalid value %q for flag -release: want %s", f.release, strings.Join(webapp.Releases, " or ")))
	}
	keys := fs.Args()
	switch {
	case f.all && len(keys) > 0:
		return cli.Fail(stderr, cmdName+" plan", 2, errors.New("give either --all or namespace/name arguments, not both"))
	case !f.all && len(keys) == 0:
		return cli.Fail(stderr, cmdName+" plan", 2, errors.New("name the WebApps to plan (namespace/name...) or pass --all"))
	}
	for _, k := range keys {
		if ns, name, ok := strings.Cut(k, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return cli.Fail(stderr, cmdName+" plan", 2, fmt.Errorf("invalid argument %q: want namespace/name", k))
		}
	}
	if err := plan(ctx, f, keys, stdout); err != nil {
		return cli.Fail(stderr, cmdName+" plan", 1, err)
	}
	return 0
}

func plan(ctx context.Context, f planFlags, keys []string, stdout io.Writer) error {
	restConfig, _, err := operator.Options{Kubeconfig: f.kubeconfig, KubeAPIQPS: f.qps, KubeAPIBurst: f.burst}.RESTConfig()
	if err != nil {
		return err
	}
	restConfig.UserAgent = cmdName + "-plan"
	perms := []cli.Permission{}
	for _, r := range []struct{ group, resource string }{{v1alpha1.Group, v1alpha1.Resource}, {"", "configmaps"}, {"apps", "deployments"}, {"", "services"}} {
		perms = append(perms, cli.Permission{Verb: "get", Group: r.group, Resource: r.resource, Namespace: f.namespace})
	}
	if f.all {
		perms = append(perms, cli.Permission{Verb: "list", Group: v1alpha1.Group, Resource: v1alpha1.Resource, Namespace: f.namespace})
	}
	if err := cli.Check(ctx, restConfig, v1alpha1.GroupVersionResource, false, perms); err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	sets, err := webapp.NewResourceSets(webapp.ResourceSetsConfig{
		Client:   kube,
		Children: webapp.NewLiveChildren(kube),
	})
	if err != nil {
		return err
	}

	var objects []*unstructured.Unstructured
	webapps := dyn.Resource(v1alpha1.GroupVersionResource)
	if f.all {
		list, err := webapps.Namespace(f.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list webapps: %w", err)
		}
		for i := range list.Items {
			objects = append(objects, &list.Items[i])
		}
	} else {
		for _, k := range keys {
			ns, name, _ := strings.Cut(k, "/")
			u, err := webapps.Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("get webapp %s: %w", k, err)
			}
			objects = append(objects, u)
		}
	}

	var total planTotals
	for _, u := range objects {
		if err := planOne(ctx, stdout, sets, f.release, u, &total); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%d object%s: %d to create, %d to update, %d to delete; nothing was changed\n",
		len(objects), plural(len(objects)), total.create, total.update, total.delete)
	return nil
}

type planTotals struct{ create, update, delete int }

// planOne prints the plan of one WebApp.
func planOne(ctx context.Context, w io.Writer, sets []*router.ResourceSet, release string, u *unstructured.Unstructured, total *planTotals) error {
	key := u.GetNamespace() + "/" + u.GetName()
	routed, routedOK := webapp.ReleaseOf(u.GetLabels())
	header := "webapp " + key
	switch {
	case release == "" && !routedOK:
		fmt.Fprintf(w, "%s: no release handles label %s=%q (the operator reports it and changes nothing); use --release to plan one\n\n",
			header, webapp.LabelRelease, u.GetLabels()[webapp.LabelRelease])
		return nil
	case release == "":
		release = routed
		header += " (release " + release + ")"
	case routedOK && routed == release:
		header += " (release " + release + ", as its label routes it)"
	case routedOK:
		header += fmt.Sprintf(" (release %s; its label routes it to release %s)", release, routed)
	default:
		header += fmt.Sprintf(" (release %s; its label routes it nowhere)", release)
	}
	if u.GetDeletionTimestamp() != nil {
		header += ", being deleted"
	}
	fmt.Fprintln(w, header)

	var obj any = u
	if typed, err := v1alpha1.FromUnstructured(u); err == nil {
		obj = typed
	}
	plans, err := framework.Plan(ctx, obj, webapp.SetFor(sets, release).Resources())
	for _, p := range plans {
		if !p.Changes() {
			fmt.Fprintf(w, "  %s: no changes\n", p.Resource)
			continue
		}
		fmt.Fprintf(w, "  %s:\n", p.Resource)
		for _, c := range []any{p.Create, p.Update, p.Delete} {
			if c == nil {
				continue
			}
			for _, line := range framework.DescribeChange(c) {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
		if p.Create != nil {
			total.create++
		}
		if p.Update != nil {
			total.update++
		}
		if p.Delete != nil {
			total.delete++
		}
	}
	if err != nil {
		// An invalid spec stops the plan where it would stop a
		// reconciliation; that is a finding, not a failure of the command.
		fmt.Fprintf(w, "  stops: %s\n", strings.Join(strings.Fields(err.Error()), " "))
		if !errors.Is(err, webapp.ErrInvalidSpec) {
			return fmt.Errorf("plan %s: %w", key, err)
		}
	}
	fmt.Fprintln(w)
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
