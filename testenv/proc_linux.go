package testenv

import "syscall"

// sysProcAttr makes the kernel send SIGTERM to the child when this process
// dies, however it dies (SIGKILL, a `go test -timeout` panic): the server
// program shuts down and never outlives its test. The closed stdin pipe
// tells it the same on every platform.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
