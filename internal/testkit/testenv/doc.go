// Package testenv is what the end-to-end tests, the chaos driver
// (internal/chaos, scripts/chaos) and the benchmark driver (scripts/bench)
// share: the module root and building binaries in it (root.go), the Azurite
// emulator and its connection string (azurite.go), processes started so that
// they cannot outlive the driver (process.go, proc_*.go), and the small
// helpers they all need (helpers.go): log tails, sleeping and polling until a
// context ends, random names, a clean environment.
//
// It is test and benchmark tooling: leaderrun's binary never imports it.
package testenv
