// Command faultproxy is test infrastructure for wlmap's e2e fault tests: a TLS reverse proxy in
// front of the testbed's kube-apiserver that injects the faults a real cluster produces —
// throttling (429), an expired continue token (410), slow answers, a dropped connection, and a
// 502 while the apiserver behind it is restarting (what a load balancer answers). Faults are
// armed over a control endpoint; every request is logged so tests can count retries. A request
// can be held until the test releases it, so a test can act at a known point of a listing
// (between two pages) without guessing how long that point lasts.
//
//	faultproxy -upstream https://127.0.0.1:6443 -ca ca.crt -cert admin.crt -key admin.key \
//	           -serve-cert apiserver.crt -serve-key apiserver.key
//
// prints "https://127.0.0.1:PORT" on its first stdout line. Control (same port, no auth; the
// proxy listens on loopback only):
//
//	GET /__fault?kind=429|503|410|delay|drop|hold&count=N[&on=continue][&method=M][&match=S]...[&ms=MS]   (N<0: always; each match S must be in the path and query)
//	GET /__release          let every held request go on (to the apiserver as it is then)
//	GET /__reset            clear faults and the log (and release what is held)
//	GET /__log              one line per proxied request: "METHOD PATH?QUERY -> STATUS"
//
// (GET, so that `kubectl get --raw` drives it.)
package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

type fault struct {
	kind       string   // 429, 503, 410, delay, drop, hold
	left       int      // requests still to hit; <0 = every request
	onContinue bool     // only LIST requests that carry a continue token
	method     string   // only requests of this method (empty: any)
	match      []string // only requests whose path and query contain each of these
	delay      time.Duration
}

// injected are the answers of the status faults, as the API server words them.
var injected = map[string]struct {
	code            int
	reason, message string
}{
	"429": {http.StatusTooManyRequests, "TooManyRequests", "too many requests, please try again later"},
	"503": {http.StatusServiceUnavailable, "ServiceUnavailable", "the server is currently unable to handle the request"},
	"410": {http.StatusGone, "Expired", "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."},
}

type state struct {
	mu     sync.Mutex
	faults []*fault
	log    []string
	// epoch counts resets: a request that arrived before a reset (a delayed one from an
	// earlier step, finishing late) is not logged after it, so each step's log is its own.
	epoch int
	// release is closed to let the requests held so far go on; a new one replaces it.
	release chan struct{}
}

// hold logs the request as held, then waits until the test releases it.
func (s *state) hold(epoch int, line string) {
	s.mu.Lock()
	if epoch == s.epoch {
		s.log = append(s.log, line+" -> held")
	}
	wait := s.release
	s.mu.Unlock()
	<-wait
}

// releaseAll lets every held request go on.
func (s *state) releaseAll() {
	s.mu.Lock()
	close(s.release)
	s.release = make(chan struct{})
	s.mu.Unlock()
}

// take returns the fault this request triggers, if any, and spends one of its uses.
func (s *state) take(r *http.Request) *fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.faults {
		if f.left == 0 {
			continue
		}
		if f.onContinue && r.URL.Query().Get("continue") == "" {
			continue
		}
		if f.method != "" && f.method != r.Method {
			continue
		}
		if !containsAll(r.URL.RequestURI(), f.match) {
			continue
		}
		if f.left > 0 {
			f.left--
		}
		return f
	}
	return nil
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// begin returns the epoch a request arrived in.
func (s *state) begin() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}

// record logs a request's outcome, unless a reset came between its arrival and now.
func (s *state) record(epoch int, line string) {
	s.mu.Lock()
	if epoch == s.epoch {
		s.log = append(s.log, line)
	}
	s.mu.Unlock()
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(c int) { w.code = c; w.ResponseWriter.WriteHeader(c) }

// Flush lets watch and chunked responses through (not used by wlmap, kept correct anyway).
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func status(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%q,"reason":%q,"code":%d}`, msg, reason, code)
}

func main() {
	upstream := flag.String("upstream", "", "apiserver URL")
	ca := flag.String("ca", "", "CA bundle of the apiserver")
	cert := flag.String("cert", "", "client certificate for the apiserver")
	key := flag.String("key", "", "client key for the apiserver")
	serveCert := flag.String("serve-cert", "", "serving certificate (must cover 127.0.0.1)")
	serveKey := flag.String("serve-key", "", "serving key")
	flag.Parse()

	target, err := url.Parse(*upstream)
	if err != nil || target.Host == "" {
		log.Fatalf("bad -upstream %q", *upstream)
	}
	caPEM, err := os.ReadFile(*ca)
	if err != nil {
		log.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client, err := tls.LoadX509KeyPair(*cert, *key)
	if err != nil {
		log.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{client}},
		DisableKeepAlives: true, // a restarted apiserver is reached on the next request
	}
	proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		// The apiserver is down (restarting): answer like a load balancer would.
		status(w, http.StatusBadGateway, "ServiceUnavailable", "upstream unavailable: "+err.Error())
	}

	st := &state{release: make(chan struct{})}
	mux := http.NewServeMux()
	control := func(path string, h http.HandlerFunc) { mux.HandleFunc(path, h) }
	control("/__fault", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		count, err := strconv.Atoi(q.Get("count"))
		if err != nil {
			http.Error(w, "count", http.StatusBadRequest)
			return
		}
		ms, _ := strconv.Atoi(q.Get("ms"))
		f := &fault{kind: q.Get("kind"), left: count, onContinue: q.Get("on") == "continue", method: q.Get("method"), match: q["match"], delay: time.Duration(ms) * time.Millisecond}
		st.mu.Lock()
		st.faults = append(st.faults, f)
		st.mu.Unlock()
		fmt.Fprintln(w, "armed")
	})
	control("/__release", func(w http.ResponseWriter, r *http.Request) {
		st.releaseAll()
		fmt.Fprintln(w, "released")
	})
	control("/__reset", func(w http.ResponseWriter, r *http.Request) {
		st.releaseAll()
		st.mu.Lock()
		st.faults, st.log = nil, nil
		st.epoch++
		st.mu.Unlock()
		fmt.Fprintln(w, "reset")
	})
	control("/__log", func(w http.ResponseWriter, r *http.Request) {
		st.mu.Lock()
		defer st.mu.Unlock()
		fmt.Fprint(w, strings.Join(st.log, "\n"))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		line := r.Method + " " + r.URL.RequestURI()
		epoch := st.begin()
		f := st.take(r)
		if f != nil {
			if a, ok := injected[f.kind]; ok {
				st.record(epoch, line+" -> "+f.kind+" (injected)")
				status(w, a.code, a.reason, a.message)
				return
			}
			switch f.kind {
			case "drop":
				st.record(epoch, line+" -> dropped (injected)")
				if hj, ok := w.(http.Hijacker); ok {
					if c, _, err := hj.Hijack(); err == nil {
						c.Close()
						return
					}
				}
				panic(http.ErrAbortHandler)
			case "delay":
				time.Sleep(f.delay)
			case "hold":
				st.hold(epoch, line)
			}
		}
		// The proxy authenticates upstream with its own client certificate; the caller's
		// credentials (a test token) stop here.
		r.Header.Del("Authorization")
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		proxy.ServeHTTP(sw, r)
		st.record(epoch, fmt.Sprintf("%s -> %d", line, sw.code))
	})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("https://%s\n", ln.Addr().String())
	os.Stdout.Sync()
	// HTTP/1.1 only: Hijack (the dropped connection) does not exist on HTTP/2.
	srv := &http.Server{Handler: mux, TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){}}
	log.Fatal(srv.ServeTLS(ln, *serveCert, *serveKey))
}
