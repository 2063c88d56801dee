// Command gopeer is the Go benchmark peer of the APNs fan-out benchmarks (issue 27): N APNs-style POSTs sent the way
// gorush drives the apns2 library, on the same golang.org/x/net/http2 transport, built from Debian's Go packages
// (bench/apns/gopeer/build.sh). It is a stand-in written for this repository, not apns2 itself (which Debian does not
// package); what it reproduces per push is listed in bench/apns/README.md.
//
//	gopeer <url> <ca_file> <n> <clients> <in_flight> [tokens_file]
//
// url is https://host:port/3/device/<token>, as for bench/apns/curl_multi_loop.c; with tokens_file (one token a
// line, read into memory before the clock starts, used in turn) each push goes to host:port/3/device/<its token>.
// clients: that many clients, each one http.Client over its own http2.Transport (one connection each: the sink allows
// 1,000 streams); in_flight: pushes in flight per client (gorush's max_concurrent_pushes, default 100). Prints
// notifications/s and CPU microseconds per notification (getrusage: user + system of this process over the sends).
// GOPEER_PAUSE_MS=ms sleeps after the warm-up, before the clock starts (bench/apns/sink-syscalls.sh attaches then).
package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"peerkit"
)

// The transport settings of an apns2 token client as gorush configures it: apns2 dials with a 20 s timeout and
// 15 s TCP keep-alive, its http.Client has a 60 s timeout; gorush sets the HTTP/2 health check to a PING after 1 s
// without frames and gives up on it after 1 s.
const (
	dialTimeout     = 20 * time.Second
	tcpKeepAlive    = 15 * time.Second
	clientTimeout   = 60 * time.Second
	readIdleTimeout = 1 * time.Second
	pingTimeout     = 1 * time.Second
	tokenLifetime   = 3000 * time.Second // how long a provider JWT is reused before it is signed again
)

var connectionsOpened atomic.Int64

// aps and the map around it: the payload is a small tree marshalled per push, as a payload builder's is.
type aps struct {
	Alert map[string]string `json:"alert"`
	Sound string            `json:"sound"`
}

// notification marshals to its payload, so json.Marshal(notification) renders and then validates it per push.
type notification struct {
	DeviceToken string
	Topic       string
	Priority    int
	PushType    string
	Payload     map[string]interface{}
}

func (n *notification) MarshalJSON() ([]byte, error) { return json.Marshal(n.Payload) }

// response is what a push returns: the status, the answer's ids and, on errors, the reason from the JSON body.
type response struct {
	StatusCode   int
	ApnsID       string
	ApnsUniqueID string
	Reason       string `json:"reason"`
}

// providerToken is the ES256 JWT in the authorization header, signed once and reused until it expires.
type providerToken struct {
	sync.Mutex
	key      *ecdsa.PrivateKey
	keyID    string
	teamID   string
	issuedAt time.Time
	bearer   string
}

func (t *providerToken) bearerIfFresh() string {
	t.Lock()
	defer t.Unlock()
	if t.bearer == "" || time.Since(t.issuedAt) >= tokenLifetime {
		t.issuedAt = time.Now()
		t.bearer = t.sign()
	}
	return t.bearer
}

func (t *providerToken) sign() string {
	enc := base64.RawURLEncoding
	header, _ := json.Marshal(map[string]string{"alg": "ES256", "kid": t.keyID, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]interface{}{"iss": t.teamID, "iat": t.issuedAt.Unix()})
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	digest := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, t.key, digest[:])
	if err != nil {
		peerkit.Fail("gopeer", "signing the provider token: %v", err)
	}
	signature := make([]byte, 64)
	r.FillBytes(signature[:32])
	s.FillBytes(signature[32:])
	return input + "." + enc.EncodeToString(signature)
}

type client struct {
	host  string
	token *providerToken
	http  *http.Client
}

func newClient(host string, roots *x509.CertPool, token *providerToken) *client {
	transport := &http2.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots}, // the sink's certificate; the transport adds ALPN h2
		DialTLS: func(network, addr string, cfg *tls.Config) (net.Conn, error) {
			connectionsOpened.Add(1)
			return tls.DialWithDialer(&net.Dialer{Timeout: dialTimeout, KeepAlive: tcpKeepAlive}, network, addr, cfg)
		},
		ReadIdleTimeout: readIdleTimeout,
		PingTimeout:     pingTimeout,
	}
	return &client{host: host, token: token, http: &http.Client{Transport: transport, Timeout: clientTimeout}}
}

// push is one notification's whole round: render, build the request, send, read the answer.
func (c *client) push(ctx context.Context, n *notification) (*response, error) {
	body, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	request, err := http.NewRequestWithContext(ctx, http.MethodPost, c.host+"/3/device/"+n.DeviceToken, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	request.Header.Set("authorization", "bearer "+c.token.bearerIfFresh())
	request.Header.Set("Content-Type", "application/json; charset=utf-8")
	request.Header.Set("apns-topic", n.Topic)
	request.Header.Set("apns-priority", strconv.Itoa(n.Priority))
	request.Header.Set("apns-push-type", n.PushType)
	answer, err := c.http.Do(request)
	if err != nil {
		return nil, err
	}
	defer answer.Body.Close()
	r := &response{StatusCode: answer.StatusCode, ApnsID: answer.Header.Get("apns-id"),
		ApnsUniqueID: answer.Header.Get("apns-unique-id")}
	if err := json.NewDecoder(answer.Body).Decode(r); err != nil && err != io.EOF {
		return nil, err
	}
	return r, nil
}

func main() {
	args := peerkit.ParseArgs("gopeer")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader) // a .p8 key of its own; the sink checks nothing
	if err != nil {
		peerkit.Fail("gopeer", "%v", err)
	}
	token := &providerToken{key: key, keyID: "KEY1234567", teamID: "TEAM123456"}
	template := notification{Topic: "com.example.app", Priority: 10, PushType: "alert", Payload: map[string]interface{}{
		"aps": aps{Alert: map[string]string{"title": "Benchmark",
			"body": "A notification body of a typical size for APNs pushes."}, Sound: "default"},
		"id": 123,
	}}

	// One push per client before the clock starts, as a running server's connection is already up (and the
	// transport then knows the server's stream limit instead of opening a second connection at its initial 100).
	pool := make([]*client, args.Clients)
	for i := range pool {
		pool[i] = newClient(args.Host, args.Roots, token)
		warm := template
		warm.DeviceToken = args.Tokens[0]
		if r, err := pool[i].push(context.Background(), &warm); err != nil || r.StatusCode != http.StatusOK {
			peerkit.Fail("gopeer", "warm-up push failed: %v %v", r, err)
		}
	}
	var tally peerkit.Counts
	peerkit.SendAll("gopeer", "x/net http2", args, &tally, connectionsOpened.Load, func(i int, share []string) {
		peerkit.Window(share, args.InFlight, &tally, func(deviceToken string) (int, error) {
			n := template
			n.DeviceToken = deviceToken
			r, err := pool[i].push(context.Background(), &n)
			if err != nil {
				return 0, err
			}
			return r.StatusCode, nil
		})
	})
}
