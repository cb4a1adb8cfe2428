// Package e2e holds leaderrun's end-to-end tests: the built binary driven by
// the testscripts in testdata/script, against the Azurite emulator, with the
// fault proxy and the fake metadata service of internal/testkit where a test
// needs the service's hard answers; and one trial of every chaos scenario.
// It has no code outside its tests.
package e2e
