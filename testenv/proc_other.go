//go:build !linux

package testenv

import (
	"os"
	"syscall"
)

// sysProcAttr has no parent-death signal outside Linux: the server program
// notices its parent is gone when its stdin closes.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// buildProcAttr is sysProcAttr for the go command that builds the server
// program.
func buildProcAttr() *syscall.SysProcAttr { return nil }

// killBuild kills the go command, as exec.CommandContext does by default.
func killBuild(p *os.Process) error { return p.Kill() }
