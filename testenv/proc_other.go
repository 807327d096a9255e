//go:build !linux

package testenv

import "syscall"

// sysProcAttr has no parent-death signal outside Linux: the server program
// notices its parent is gone when its stdin closes.
func sysProcAttr() *syscall.SysProcAttr { return nil }
