package reliability

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// defaultMetricsAddress is the metrics address the binary uses when not
// told otherwise: "127.0.0.1:8080".
const defaultMetricsAddress = "127.0.0.1:8080"

// TestMetricsBindLoopbackByDefault: /metrics, /healthz and the debug pages
// bind to 127.0.0.1 unless told otherwise. The flag's documented default is
// a loopback address, and a run without the flag listens on 127.0.0.1 only
// (checked in /proc/net/tcp) and serves /healthz and /metrics there.
func TestMetricsBindLoopbackByDefault(t *testing.T) {
	out, err := exec.Command(operatorBinary(t), "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("--help: %v\n%s", err, out)
	}
	def, ok := flagDefault(string(out), "metrics-bind-address")
	if !ok {
		t.Fatalf("--help does not document a default for --metrics-bind-address:\n%s", out)
	}
	host, port, err := net.SplitHostPort(def)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		t.Fatalf("--metrics-bind-address defaults to %q, want a loopback address", def)
	}
	if def != defaultMetricsAddress {
		t.Fatalf("--metrics-bind-address defaults to %q, want %q", def, defaultMetricsAddress)
	}

	// Run without the flag. Another program on this machine may hold the
	// port; then only the documented default is checked.
	if ln, err := net.Listen("tcp", def); err != nil {
		t.Skipf("port %s is busy (%v); checked the documented default only", port, err)
	} else {
		ln.Close()
	}
	ns := newNamespace(t)
	_, cfg, _ := operatorIdentity(t, ns, nil)
	p := startBinary(t, "operator", "--kubeconfig", kubeconfigFor(t, cfg), "--namespace", ns, "--leader-elect=false")
	starting := p.waitFor(t, "starting", 1)[0]
	if got := starting.kv["metrics"]; got != "http://"+defaultMetricsAddress {
		t.Errorf("the operator serves metrics on %q, want http://%s", got, defaultMetricsAddress)
	}
	listeners, err := tcpListeners()
	if err != nil {
		t.Fatal(err)
	}
	var on []string
	for _, l := range listeners {
		if strings.HasSuffix(l, ":"+port) {
			on = append(on, l)
		}
	}
	if len(on) != 1 || on[0] != defaultMetricsAddress {
		t.Errorf("listening sockets on port %s: %v, want only %s", port, on, defaultMetricsAddress)
	}
	for _, path := range []string{"/healthz", "/metrics"} {
		resp, err := http.Get("http://" + defaultMetricsAddress + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s\n%s", path, resp.Status, body)
		}
		if path == "/metrics" && !strings.Contains(string(body), "operatorkit_framework_reconciliations_total") {
			t.Errorf("/metrics lacks the framework's metrics")
		}
	}
	p.Signal(t, syscall.SIGTERM)
	if code := p.ExitCode(t, 60*time.Second); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0", code)
	}
	t.Logf("default %s; a run without the flag listened on %v and served /healthz and /metrics", def, on)
}

// flagDefault finds `(default "x")` in the usage of flag name.
func flagDefault(usage, name string) (string, bool) {
	_, rest, ok := strings.Cut(usage, "-"+name+" ")
	if !ok {
		return "", false
	}
	// The flag's description runs until the next flag's line.
	if i := strings.Index(rest, "\n  -"); i >= 0 {
		rest = rest[:i]
	}
	_, def, ok := strings.Cut(rest, `(default "`)
	if !ok {
		return "", false
	}
	def, _, ok = strings.Cut(def, `")`)
	return def, ok
}

// tcpListeners returns the "ip:port" of every listening IPv4 and IPv6 TCP
// socket of this network namespace, from /proc/net/tcp{,6}.
func tcpListeners() ([]string, error) {
	var out []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 4 || fields[3] != "0A" { // LISTEN
				continue
			}
			addr, err := parseProcAddr(fields[1])
			if err != nil {
				f.Close()
				return nil, err
			}
			out = append(out, addr)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parseProcAddr turns "0100007F:1F90" (little-endian words) into
// "127.0.0.1:8080".
func parseProcAddr(s string) (string, error) {
	hexIP, hexPort, ok := strings.Cut(s, ":")
	if !ok || len(hexIP)%8 != 0 {
		return "", errors.New("bad address " + s)
	}
	ip := make(net.IP, len(hexIP)/2)
	for w := 0; w < len(hexIP)/8; w++ {
		for b := 0; b < 4; b++ {
			var v byte
			for _, c := range hexIP[w*8+(3-b)*2 : w*8+(3-b)*2+2] {
				v <<= 4
				switch {
				case c >= '0' && c <= '9':
					v |= byte(c - '0')
				case c >= 'A' && c <= 'F':
					v |= byte(c - 'A' + 10)
				}
			}
			ip[w*4+b] = v
		}
	}
	var port int
	for _, c := range hexPort {
		port <<= 4
		switch {
		case c >= '0' && c <= '9':
			port |= int(c - '0')
		case c >= 'A' && c <= 'F':
			port |= int(c - 'A' + 10)
		}
	}
	return net.JoinHostPort(ip.String(), itoa(port)), nil
}

func itoa(i int) string { return strconv.Itoa(i) }
