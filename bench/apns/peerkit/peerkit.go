// Package peerkit is what the Go benchmark peers (bench/apns/gopeer, bench/apns/apns2peer) share: their command
// line, the tokens and CA they read before the clock starts, the clients' shares sent concurrently under the clock,
// and the one line they print. Each peer keeps only how it sends a push.
package peerkit

import (
	"bufio"
	"crypto/x509"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Args is a peer's command line: <url> <ca_file> <n> <clients> <in_flight> [tokens_file].
type Args struct {
	// Host is the url before /3/device/.
	Host string
	// Roots trusts the sink's certificate (ca_file).
	Roots *x509.CertPool
	// Tokens are the n device tokens to send to: the tokens file's in turn, or the url's token n times.
	Tokens []string
	// Clients is how many clients (connections) send; InFlight the pushes in flight per client.
	Clients, InFlight int
}

// Counts are a run's answers: 200s, other statuses, and pushes that failed without an answer.
type Counts struct{ OK, OtherStatus, Failed atomic.Int64 }

// Fail prints the peer's name and the message on stderr and exits 1.
func Fail(name, format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, name+": "+format+"\n", args...)
	os.Exit(1)
}

// ParseArgs reads the command line (exit 2 on a malformed one), the tokens and the CA file.
func ParseArgs(name string) Args {
	if len(os.Args) != 6 && len(os.Args) != 7 {
		fmt.Fprintf(os.Stderr, "usage: %s <url> <ca_file> <n> <clients> <in_flight> [tokens_file]\n", os.Args[0])
		os.Exit(2)
	}
	url, caFile := os.Args[1], os.Args[2]
	n, errN := strconv.Atoi(os.Args[3])
	clients, errC := strconv.Atoi(os.Args[4])
	inFlight, errF := strconv.Atoi(os.Args[5])
	if errN != nil || errC != nil || errF != nil || n <= 0 || clients <= 0 || inFlight <= 0 {
		os.Exit(2)
	}
	cut := strings.Index(url, "/3/device/")
	if cut < 0 {
		Fail(name, "the url must end in /3/device/<token>: %s", url)
	}
	source := []string{url[cut+len("/3/device/"):]}
	if len(os.Args) == 7 {
		source = readTokens(name, os.Args[6])
	}
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = source[i%len(source)]
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		Fail(name, "%v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		Fail(name, "no certificate in %s", caFile)
	}
	return Args{Host: url[:cut], Roots: roots, Tokens: tokens, Clients: clients, InFlight: inFlight}
}

func readTokens(name, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		Fail(name, "%v", err)
	}
	defer f.Close()
	var tokens []string
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		if line := strings.TrimSpace(scanner.Text()); line != "" {
			tokens = append(tokens, line)
		}
	}
	if err := scanner.Err(); err != nil || len(tokens) == 0 {
		Fail(name, "no tokens read from %s (%v)", path, err)
	}
	return tokens
}

func cpuSeconds(name string) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		Fail(name, "getrusage: %v", err)
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// SendAll sends every token through the clients and prints the peer's line: after GOPEER_PAUSE_MS (time for a
// syscall counter to attach), the tokens are dealt in equal contiguous shares, and `send(client, share)` runs for
// each client at once under the clock. Rate = n / the wall time of the sends; CPU = getrusage user + system of the
// whole process over them (the Go runtime's threads and garbage collector included), per notification. Exits 1
// when any push failed or was answered with another status than 200.
func SendAll(name, library string, args Args, tally *Counts, connections func() int64, send func(client int, share []string)) {
	if ms, _ := strconv.Atoi(os.Getenv("GOPEER_PAUSE_MS")); ms > 0 {
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	n := len(args.Tokens)
	var wg sync.WaitGroup
	t0, c0 := time.Now(), cpuSeconds(name)
	for i := 0; i < args.Clients; i++ {
		lo, hi := i*n/args.Clients, (i+1)*n/args.Clients
		wg.Add(1)
		go func(client int, share []string) {
			defer wg.Done()
			send(client, share)
		}(i, args.Tokens[lo:hi])
	}
	wg.Wait()
	wall, cpu := time.Since(t0).Seconds(), cpuSeconds(name)-c0
	fmt.Printf("%s n=%d clients=%d in_flight=%d: %.0f notifications/s, %.1f us CPU/notification "+
		"(wall %.2f s, cpu %.2f s, 200: %d, other status: %d, failed: %d, connections opened: %d) [%s, %s, GOMAXPROCS=%d]\n",
		name, n, args.Clients, args.InFlight, float64(n)/wall, cpu*1e6/float64(n), wall, cpu, tally.OK.Load(),
		tally.OtherStatus.Load(), tally.Failed.Load(), connections(), runtime.Version(), library, runtime.GOMAXPROCS(0))
	if tally.Failed.Load() != 0 || tally.OtherStatus.Load() != 0 {
		os.Exit(1)
	}
}

// Window runs `push(token)` for every token with at most inFlight at once, as gorush does: one goroutine per push,
// a slot taken from a buffered channel before it starts and given back when its answer is read. `push` reports a
// status code, or an error for a push without an answer; the first five errors are printed.
func Window(tokens []string, inFlight int, tally *Counts, push func(token string) (int, error)) {
	slots := make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	for _, token := range tokens {
		slots <- struct{}{}
		wg.Add(1)
		go func(token string) {
			defer wg.Done()
			status, err := push(token)
			switch {
			case err != nil:
				if tally.Failed.Add(1) <= 5 {
					fmt.Fprintf(os.Stderr, "push failed: %v\n", err)
				}
			case status == 200:
				tally.OK.Add(1)
			default:
				tally.OtherStatus.Add(1)
			}
			<-slots
		}(token)
	}
	wg.Wait()
}
