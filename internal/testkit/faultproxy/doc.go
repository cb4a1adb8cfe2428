// Package faultproxy is an HTTP reverse proxy that injects faults between a
// leaderrun process and the Azurite storage emulator: answers refused by the
// "service", added latency, connections reset, requests never answered. It is
// a tool for tests, chaos runs and benchmarks, not a production proxy.
//
// The proxy listens on 127.0.0.1 only and forwards only to the loopback target
// given to New, over plain HTTP/1.1 (no TLS, no HTTP/2). A forwarded request
// keeps its method, its path with the client's own escaping ("%2F" stays
// "%2F", "/" stays "/"), its query, its headers (Authorization, x-ms-date and
// every other x-ms-* header) and its body. Only hop-by-hop headers (Connection
// and the headers it names, Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding,
// Upgrade) are dropped, as any HTTP/1.1 proxy must, and the Host header names
// the target. Azure's SharedKey signature covers the account, the path and the
// query but not Host, so a signed request stays valid at the target. Responses
// are streamed back as the target sent them, its Date header included; the
// proxy adds no Date of its own to a forwarded response.
//
// A request is judged by the mode current when its headers have been read;
// only a request held in a black hole looks at later changes (see
// Mode.BlackHole). Every request is counted (see Counts), injected or not.
package faultproxy
