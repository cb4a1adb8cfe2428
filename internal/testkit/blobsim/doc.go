// Package blobsim is an in-memory model of the Azure Blob service with the
// service's rules, for leaderrun's deterministic simulation: the real lease
// package, through the Azure SDK (azblob v1.8.0), talks to a Service
// through a Transport per contender, inside a testing/synctest bubble. It
// is test tooling: leaderrun's binary never imports it.
//
// # What it models
//
// One storage account, devstoreaccount1 (Account, Key; ConnectionString
// for a client whose requests go through Transport), its containers and
// block blobs: name, metadata (names lowercased), ETag (a new one on every
// write of content or metadata, never on a lease operation), creation and
// last-modified times, and the lease: available, leased (15–60 s or
// infinite), expired, breaking, broken, with its ID, expiry and break time.
// The requests: Create, Delete and Get Container Properties; Get Account
// Information; List Blobs flat (prefix, maxresults up to 5,000, an opaque
// marker, startFrom, include=metadata); Put Blob; Get Blob Properties;
// Set Blob Metadata; Delete Blob; Lease Blob (acquire, renew, change,
// release, break, with or without a break period, answering
// x-ms-lease-time). If-Match, If-None-Match, If-Modified-Since and
// If-Unmodified-Since, and x-ms-lease-id as a condition of writes and
// reads. Refusals are the service's: status, x-ms-error-code and the XML
// error body, which the SDK's bloberror.HasCode reads as it reads the
// service's.
//
// Time is time.Now, in a bubble the bubble's clock: a lease expires, and a
// break ends, at its exact instant, with no request needed. The Date
// header, Last-Modified and x-ms-creation-time have the service's
// one-second resolution. ETags, request IDs and the lease IDs the service
// chooses come from counters: a seed replays to the same answers.
//
// # What it does not model
//
// Blob content (Put Blob's body is counted, not kept), Get Blob,
// snapshots, versions, soft delete, tags, page and append blobs, container
// leases and metadata, access policies, and the signature of a request (a
// request must carry SharedKey for the account, a bearer token or a SAS;
// none is checked). A request outside the model is answered 501
// NotImplemented, so that a test that strays sees it at once. Deleting a
// container takes effect at once (the service takes a while, answering
// 409 ContainerBeingDeleted meanwhile). The service's own failures
// (throttling, internal errors, timeouts, lost answers) are not the
// model's: the simulator draws them as faults.
//
// # How it was checked
//
// conformance_test.go plays the same sequences of SDK calls, the ones
// lease makes, against the model and against the Azurite emulator (when
// LEADERRUN_TEST_CONNECTION_STRING names one), and compares every answer:
// status, error code, lease state, ETag changes, x-ms-lease-time,
// metadata, listings page by page. It covers every row of the lease table
// measured on Azurite, the break-period rules, expiry and the renewal of
// an expired lease, conditional headers and lease-ID conditions. Where
// Azurite and the service differ, the model follows the service and the
// scenario says so: lease IDs must be GUIDs and are compared by value,
// metadata is at most 8 KiB, Get Account Information says whether the
// account has a hierarchical namespace.
//
// # Faults, and what the simulator checks
//
// SetFaults draws a Plan for each request that comes through a Transport
// or Handler: a delay before the service, a connection refused, a refusal
// (503 ServerBusy, 500 InternalError, ...), a write applied whose answer is
// lost (a client timeout, a reset, an error status), a delay before the
// answer. Every wait honours the request's context and none leaves a
// goroutine behind.
//
// OnApply reports each request the service applied or refused, in order,
// with the blob's lease and metadata after it. HeldThroughout answers
// whether a lease ID held a blob's lease at the service during a whole
// interval (Tenures lists the holds); Blob, Names and ContainerExists read
// the state as it is.
package blobsim
