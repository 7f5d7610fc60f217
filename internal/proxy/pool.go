package proxy

import (
	"net/http"
	"time"
)

// UpstreamTransport is the HTTP transport of the proxy's streamable HTTP
// upstream sessions when their transport names none. Every host session
// has an upstream session of its own, so a proxy serving N host sessions
// keeps up to N calls in flight to one upstream host; Go's default
// transport keeps only two idle connections per host, and under load the
// rest were closed after each answer and dialled again for the next call
// (a TCP handshake, two goroutines and their buffers per call, on both
// sides). This one keeps them, and lets them go after 30 s unused, so an
// idle proxy holds no connections it does not need.
var UpstreamTransport http.RoundTripper = upstreamTransport()

func upstreamTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0 // no limit across hosts; MaxIdleConnsPerHost bounds it
	t.MaxIdleConnsPerHost = maxIdlePerHost
	t.IdleConnTimeout = 30 * time.Second
	return t
}

// maxIdlePerHost bounds the idle connections kept to the upstream: more
// than the host sessions a proxy serves at once under load.
const maxIdlePerHost = 1024
