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
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/sideshow/apns2"
	"github.com/sideshow/apns2/payload"
	"github.com/sideshow/apns2/token"
	"golang.org/x/net/http2"
	"peerkit"
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

func main() {
	args := peerkit.ParseArgs("apns2peer")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader) // a .p8 key of its own; the sink checks nothing
	if err != nil {
		peerkit.Fail("apns2peer", "%v", err)
	}
	providerToken := &token.Token{AuthKey: key, KeyID: "KEY1234567", TeamID: "TEAM123456"}

	// One push per client before the clock starts, as a running server's connection is already up (and the
	// transport then knows the server's stream limit).
	pool := make([]*apns2.Client, args.Clients)
	for i := range pool {
		pool[i] = newClient(args.Host, args.Roots, providerToken)
		if r, err := pool[i].Push(notification(args.Tokens[0])); err != nil || r.StatusCode != http.StatusOK {
			peerkit.Fail("apns2peer", "warm-up push failed: %v %v", r, err)
		}
	}
	var tally peerkit.Counts
	peerkit.SendAll("apns2peer", "apns2 v0.25.0", args, &tally, connectionsOpened.Load, func(i int, share []string) {
		peerkit.Window(share, args.InFlight, &tally, func(deviceToken string) (int, error) {
			response, err := pool[i].PushWithContext(context.Background(), notification(deviceToken))
			if err != nil {
				return 0, err
			}
			return response.StatusCode, nil
		})
	})
}
