//go:build !unix

package testenv

import "os"

// processExists reports whether a process pid exists, as far as
// os.FindProcess can tell.
func processExists(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
