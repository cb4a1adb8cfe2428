// Package lease is leaderrun's leadership: a lease on an Azure Storage blob.
//
// A [Container] holds the credentials and lists its blobs; a [Blob] of it
// (the lock) reads or breaks its lease. An [Elector] acquires the lease for
// one holder identity, waiting for it if asked; the resulting [Lease]
// records runs in the blob's metadata, and its keeper ([Lease.Keep]) renews
// it and closes [Lease.Lost] when the lease can no longer be trusted.
//
// # The promise
//
// Let t_ok be the local monotonic time at which the last successful acquire
// or renew request was sent. The storage service cannot give the lease to
// anyone else before t_ok + Duration. The keeper closes Lost with
// StopAt ≤ t_ok + Duration − 1.5 s − StopBudget and KillBy ≤ t_ok + Duration −
// 1.5 s, so a caller that stops its child by StopAt and kills it by KillBy has
// the child dead (with 0.5 s for SIGKILL to take effect) a second before the
// lease could pass to another holder. That holds whatever the network does
// (every request carries a deadline that ends before StopAt), and as long as
// this host's monotonic clock does not run more than 1 s per lease duration
// slower than the service's (6.6 % at 15 s, 1.6 % at 60 s), and the caller
// acts on Lost within the margins. A process frozen for longer than the
// lease (SIGSTOP, a paused VM) cannot keep the promise while frozen; on
// waking the keeper closes Lost with StopAt = KillBy = now.
//
// # The limits
//
// The lease does not fence the child's writes: a child that is paused, or
// whose writes are in flight, can still act after another holder took over.
// Systems that must reject a stale leader's writes should use the fencing
// token, [Lease.Term] (LEADERRUN_TERM), which grows at every acquisition.
//
// Times that decisions depend on (acquiredat, lastrunstart, --once-per) come
// from the service's Date response header (one-second resolution), never from
// this host's wall clock.
//
// Nothing here starts processes: the caller (leaderrun's cmd package) owns
// the child and acts on Lost.
package lease
