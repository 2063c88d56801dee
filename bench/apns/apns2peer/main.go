// Command apns2peer is the apns2 benchmark peer of the APNs fan-out benchmarks (issue 27): N pushes sent through the
// apns2 library itself (github.com/sideshow/apns2 v0.25.0, unmodified, the sender gorush uses), driven the way
// gorush drives it: one token client per connection, gorush's HTTP/2 health check, a payload built per push and a
// goroutine per push under a window of pushes in flight. bench/apns/apns2peer/build.sh builds it inside a copy of
// apns2's own source tree with its vendored modules, offline (Debian's Go 1.19, the module proxy off).
//
//	apns2peer <url> <ca_file> <n> <clients> <in_flight> [tokens_file]
//
// The arguments and the printed line are those of bench/apns/gopeer (its stand-in written for this repository):
// url is https://host:port/3/device/<token>; with tokens_file each push goes to the next token read from it (read
// before the clock starts); clients: that many apns2 clients, each its own connection; in_flight: pushes in flight
// per client (gorush's max_concurrent_pushes, default 100). Prints notifications/s and CPU microseconds per
// notification (getrusage: user + system of this process over the sends).
// GOPEER_PAUSE_MS=ms sleeps after the warm-up, before the clock starts (bench/apns/sink-syscalls.sh attaches then).
package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sideshow/apns2"
	"github.com/sideshow/apns2/payload"
	"github.com/sideshow/apns2/token"
	"golang.org/x/net/http2"
)

// gorush's HTTP/2 health check on an apns2 client's transport: a PING after 1 s without frames, given up after 1 s.
const (
	readIdleTimeout = 1 * time.Second
	pingTimeout     = 1 * time.Second
)

var connectionsOpened atomic.Int64

// newClient is apns2's token client with the sink's certificate trusted and gorush's health check; apns2's own
// dialer (its timeouts and keep-alive) does the dialling, counted here.
func newClient(host string, roots *x509.CertPool, providerToken *token.Token) *apns2.Client {
	client := apns2.NewTokenClient(providerToken)
	client.Host = host
	transport := client.HTTPClient.Transport.(*http2.Transport)
	transport.TLSClientConfig = &tls.Config{RootCAs: roots}
	transport.ReadIdleTimeout = readIdleTimeout
	transport.PingTimeout = pingTimeout
	dial := transport.DialTLS
	transport.DialTLS = func(network, addr string, cfg *tls.Config) (net.Conn, error) {
		connectionsOpened.Add(1)
		return dial(network, addr, cfg)
	}
	return client
}

// notification is what gorush builds per push: the payload through apns2's builder, the headers' fields.
func notification(deviceToken string) *apns2.Notification {
	return &apns2.Notification{
		DeviceToken: deviceToken,
		Topic:       "com.example.app",
		Priority:    apns2.PriorityHigh,
		PushType:    apns2.PushTypeAlert,
		Payload: payload.NewPayload().AlertTitle("Benchmark").
			AlertBody("A notification body of a typical size for APNs pushes.").Sound("default").Custom("id", 123),
	}
}

type counts struct{ ok, otherStatus, failed atomic.Int64 }

// sendAll sends the tokens through client with at most inFlight pushes at once: one goroutine per push, a slot
// taken from a buffered channel before it starts and given back when its answer is read.
func sendAll(client *apns2.Client, tokens []string, inFlight int, tally *counts) {
	slots := make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	for _, deviceToken := range tokens {
		slots <- struct{}{}
		wg.Add(1)
		go func(deviceToken string) {
			defer wg.Done()
			response, err := client.PushWithContext(context.Background(), notification(deviceToken))
			switch {
			case err != nil:
				if tally.failed.Add(1) <= 5 {
					fmt.Fprintf(os.Stderr, "push failed: %v\n", err)
				}
			case response.StatusCode == http.StatusOK:
				tally.ok.Add(1)
			default:
				tally.otherStatus.Add(1)
			}
			<-slots
		}(deviceToken)
	}
	wg.Wait()
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fail("getrusage: %v", err)
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "apns2peer: "+format+"\n", args...)
	os.Exit(1)
}

func readTokens(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		fail("%v", err)
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
		fail("no tokens read from %s (%v)", path, err)
	}
	return tokens
}

func main() {
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
		fail("the url must end in /3/device/<token>: %s", url)
	}
	host, urlToken := url[:cut], url[cut+len("/3/device/"):]
	source := []string{urlToken}
	if len(os.Args) == 7 {
		source = readTokens(os.Args[6])
	}
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = source[i%len(source)]
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		fail("%v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		fail("no certificate in %s", caFile)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader) // a .p8 key of its own; the sink checks nothing
	if err != nil {
		fail("%v", err)
	}
	providerToken := &token.Token{AuthKey: key, KeyID: "KEY1234567", TeamID: "TEAM123456"}

	// One push per client before the clock starts, as a running server's connection is already up (and the
	// transport then knows the server's stream limit).
	pool := make([]*apns2.Client, clients)
	for i := range pool {
		pool[i] = newClient(host, roots, providerToken)
		if r, err := pool[i].Push(notification(tokens[0])); err != nil || r.StatusCode != http.StatusOK {
			fail("warm-up push failed: %v %v", r, err)
		}
	}

	if ms, _ := strconv.Atoi(os.Getenv("GOPEER_PAUSE_MS")); ms > 0 { // time for a syscall counter to attach
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	var tally counts
	var wg sync.WaitGroup
	t0, c0 := time.Now(), cpuSeconds()
	for i, client := range pool { // tokens dealt in equal contiguous shares, each client sending its own share
		lo, hi := i*n/clients, (i+1)*n/clients
		wg.Add(1)
		go func(client *apns2.Client, share []string) {
			defer wg.Done()
			sendAll(client, share, inFlight, &tally)
		}(client, tokens[lo:hi])
	}
	wg.Wait()
	wall, cpu := time.Since(t0).Seconds(), cpuSeconds()-c0

	fmt.Printf("apns2peer n=%d clients=%d in_flight=%d: %.0f notifications/s, %.1f us CPU/notification "+
		"(wall %.2f s, cpu %.2f s, 200: %d, other status: %d, failed: %d, connections opened: %d) [%s, apns2 v0.25.0, GOMAXPROCS=%d]\n",
		n, clients, inFlight, float64(n)/wall, cpu*1e6/float64(n), wall, cpu, tally.ok.Load(), tally.otherStatus.Load(),
		tally.failed.Load(), connectionsOpened.Load(), runtime.Version(), runtime.GOMAXPROCS(0))
	if tally.failed.Load() != 0 || tally.otherStatus.Load() != 0 {
		os.Exit(1)
	}
}
