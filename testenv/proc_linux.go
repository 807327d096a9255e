package testenv

import (
	"os"
	"syscall"
)

// sysProcAttr makes the kernel send SIGTERM to the child when this process
// dies, however it dies (SIGKILL, a `go test -timeout` panic): the server
// program shuts down and never outlives its test. The closed stdin pipe
// tells it the same on every platform. The child runs in a process group
// of its own, so that a terminal's Ctrl-C (SIGINT to the foreground
// group) reaches this process only: one that handles it keeps its server
// until it stops it, and one that does not dies, and its server with it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
}

// buildProcAttr is sysProcAttr for the go command that builds the server
// program: in a process group of its own, also so that killBuild reaches
// its compilers and linker.
func buildProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
}

// killBuild kills the build started with buildProcAttr: the go command and
// every process it started (the go command ignores SIGINT while its
// compilers run, and killed alone leaves them running).
func killBuild(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGKILL) }
