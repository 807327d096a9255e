package main

import (
	"github.com/operatorkit/operatorkit/example/config"
	"github.com/operatorkit/operatorkit/example/internal/cli"
)

// operatorPermissions lists what the operator needs, from the shipped
// ClusterRole: all its rules but the plan command's gets, without writes in
// dry-run mode, the Lease rules in leaseNS and only with leader election,
// and the CRD rules only with --install-crd.
func operatorPermissions(f operatorFlags, leaderElect bool, leaseNS string) []cli.Permission {
	var perms []cli.Permission
	role, err := config.ClusterRole()
	if err != nil {
		panic(err) // the embedded YAML is tested
	}
	readOnly := map[string]bool{"get": true, "list": true, "watch": true}
	perms = append(perms, cli.PermissionsOf(role.Rules, f.namespace, func(verb, group, _ string) bool {
		switch {
		case group == "coordination.k8s.io":
			return false
		case verb == "get":
			return false // only the plan command gets objects one by one
		case f.dryRun:
			return readOnly[verb]
		}
		return true
	})...)
	if leaderElect {
		perms = append(perms, cli.PermissionsOf(role.Rules, leaseNS, func(_, group, _ string) bool { return group == "coordination.k8s.io" })...)
	}
	if f.installCRD {
		crdRole, err := config.CRDInstallerClusterRole()
		if err != nil {
			panic(err)
		}
		perms = append(perms, cli.PermissionsOf(crdRole.Rules, "", nil)...)
	}
	return perms
}
