package faultproxy

import (
	"math"
	"strings"
	"time"
)

// Mode says which faults the proxy injects. The zero Mode forwards every
// request untouched.
//
// When several fields are set, Throttle is judged first, then Reset wins
// over BlackHole, and BlackHole over Latency, ErrorRate and LoseAnswer. Latency is waited before an injected error as well as
// before forwarding, so Latency with ErrorRate models a slow, flaky service.
type Mode struct {
	// BlackHole accepts connections and requests but answers nothing and
	// forwards nothing, like a service that hangs. A held request stays held
	// across Set calls that keep BlackHole, and is let go when:
	//   - Set switches to a mode without BlackHole: it is answered 503 with
	//     the ServerBusy error, never forwarded, whatever the new mode says;
	//   - its client disconnects: nothing is sent;
	//   - the proxy is closed: its connection is closed without an answer.
	// The proxy reads and discards a held request's body, so that it notices
	// the client leaving; if the client asked for "Expect: 100-continue", the
	// body is left unread so that no interim answer goes out either, and
	// such a client leaving is noticed only when the mode changes or the
	// proxy closes.
	BlackHole bool

	// Reset resets the connection of every request that arrives (TCP RST by
	// closing with SO_LINGER 0) before anything is answered or forwarded; the
	// client sees ECONNRESET. A connection is reset when a request arrives on
	// it: a new connection with its first request, an idle keep-alive
	// connection with its next one; a connection that sends nothing is left
	// alone. Go's client retries an idempotent request (GET, HEAD) once on a
	// fresh connection when a reused one is reset, so one call can count as
	// two requests.
	Reset bool

	// Latency is waited before each request is forwarded or answered with an
	// injected error; it adds to the target's own time. Zero or negative adds
	// nothing. A request waiting out its latency is forwarded even if Set
	// changes the mode meanwhile.
	Latency time.Duration

	// ErrorRate is the share of requests, from 0 to 1, that the proxy answers
	// itself with ErrorStatus instead of forwarding them; each request draws
	// independently. Values above 1 act as 1; negative values and NaN as 0.
	ErrorRate float64

	// ErrorStatus is the HTTP status of injected errors: 500, 503, 429, ….
	// 0, or anything outside 400–599, means 503. The answer carries the
	// x-ms-error-code header and an Azure-style XML body
	// (<Error><Code>…</Code><Message>…</Message></Error>), so the Azure SDK
	// maps it as it maps the service's own: 429 and 503 are ServerBusy, 500
	// InternalError, 400 InvalidInput, 403 AuthenticationFailed, 404
	// ResourceNotFound, any other 5xx InternalError and any other 4xx
	// InvalidInput. The SDK retries 429, 500 and 503 by default.
	ErrorStatus int

	// ErrorCode, if not empty, replaces the Azure error code chosen from
	// ErrorStatus, for example "LeaseIdMismatchWithBlobOperation" with 412.
	// Only ASCII letters and digits are allowed; anything else is ignored.
	ErrorCode string

	// LoseAnswer forwards some requests and loses their answers (a write
	// applied, its answer 500 or never sent): see LoseAnswer. It applies
	// to requests that pass the faults above.
	LoseAnswer LoseAnswer

	// Throttle refuses requests to a blob beyond a rate, before anything
	// else is judged: see Throttle.
	Throttle Throttle

	// Account gives the answers of an account's and a container's
	// settings that the emulator cannot take (account.go). Its refusals
	// come after ErrorRate's and before LoseAnswer; its headers go on
	// every answer forwarded.
	Account Account

	// Only, if not empty, aims the mode at the requests whose path
	// contains it (a blob name, or part of one: "~output/"); every other
	// request is forwarded untouched, as in the zero Mode.
	Only string
}

// aimedAt is the mode for r: m, or the zero Mode when Only leaves r out.
func (m Mode) aimedAt(path string) Mode {
	if m.Only != "" && !strings.Contains(path, m.Only) {
		return Mode{}
	}
	return m
}

// latency is the wait Latency asks for.
func (m Mode) latency() time.Duration {
	return max(m.Latency, 0)
}

// errorRate is ErrorRate clamped to [0, 1].
func (m Mode) errorRate() float64 {
	if math.IsNaN(m.ErrorRate) {
		return 0
	}
	return min(max(m.ErrorRate, 0), 1)
}

// errorStatus is the status an injected error is answered with.
func (m Mode) errorStatus() int {
	if m.ErrorStatus < 400 || m.ErrorStatus > 599 {
		return 503
	}
	return m.ErrorStatus
}

// errorCode is the Azure error code an injected error carries.
func (m Mode) errorCode() string {
	if validCode(m.ErrorCode) {
		return m.ErrorCode
	}
	return codeForStatus(m.errorStatus())
}

func validCode(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
