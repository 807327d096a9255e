//go:build unix

package testenv

import "syscall"

// processExists reports whether a process pid exists (a zombie does).
func processExists(pid int) bool { return syscall.Kill(pid, 0) == nil }
