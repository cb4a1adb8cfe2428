// Package doctor is `leaderrun doctor`: it tries, for real, every request a
// run makes, on a scratch blob beside the lease (NAME~doctor-RANDOM, which
// `list` does not show as a lease) that it creates, leases, writes, lists
// and deletes, and reports what the service answered, one Check each: the
// credential, the endpoint, the API version, the account and the
// container's settings, each request allowed or refused (naming the role
// or the SAS permission that grants it), the clock against the service's,
// the round trip against what a renewal has, and the lease name itself.
//
// It goes through lease's exported requests, as any client of lease
// would, and starts no process. It prints no secret (a Check's Detail
// holds none) and leaves no blob behind, unless the delete is refused,
// which the delete check says with the blob's URL.
package doctor
