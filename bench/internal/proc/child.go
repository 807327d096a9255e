package proc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Child is a process of a benchmark driver (a contender, a replica) that
// announces the address it serves on with one line "LISTEN <address>" on
// its stdout.
type Child struct {
	// Cmd is the started command; its Process is the child's.
	Cmd *exec.Cmd
	// Addr is the address from the child's LISTEN line.
	Addr string
	// LogPath is the file that receives the child's stderr, and its
	// stdout after the LISTEN line.
	LogPath string
	what    string // names the process in errors
	done    chan struct{}
	waitErr error
}

// StartChild starts cmd, its stderr (and its stdout after the LISTEN line)
// going to a new file at logPath, and waits up to a minute for its LISTEN
// line. The process gets SIGKILL if the driver dies. what names it in
// errors ("replica r2").
func StartChild(cmd *exec.Cmd, logPath, what string) (*Child, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", what, err)
	}
	c := &Child{Cmd: cmd, LogPath: logPath, what: what, done: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- line
		_, _ = io.Copy(logFile, r)
	}()
	go func() {
		c.waitErr = cmd.Wait()
		logFile.Close()
		close(c.done)
	}()
	select {
	case line := <-lines:
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), "LISTEN ")
		if !ok {
			c.Stop(10 * time.Second)
			return nil, fmt.Errorf("%s did not announce its address (got %q); %s", what, line, c.Tail())
		}
		c.Addr = addr
		return c, nil
	case <-time.After(time.Minute):
		c.Stop(10 * time.Second)
		return nil, fmt.Errorf("%s: no LISTEN line within a minute; %s", what, c.Tail())
	}
}

// Pid returns the process id.
func (c *Child) Pid() int { return c.Cmd.Process.Pid }

// Stop sends SIGTERM, waits up to grace for the exit, then kills the
// process. It returns the exit error (nil after a clean exit).
func (c *Child) Stop(grace time.Duration) error {
	select {
	case <-c.done:
		return c.waitErr
	default:
	}
	_ = c.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = c.Cmd.Process.Kill()
		<-c.done
	}
	return c.waitErr
}

// Exited returns nil while the process runs, else an error with its exit
// status and the end of its log.
func (c *Child) Exited() error {
	select {
	case <-c.done:
		return fmt.Errorf("%s exited: %v; %s", c.what, c.waitErr, c.Tail())
	default:
		return nil
	}
}

// Tail returns the last 15 lines of the process's log.
func (c *Child) Tail() string {
	b, err := os.ReadFile(c.LogPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return "log " + c.LogPath + ":\n  " + strings.Join(lines, "\n  ")
}
