// Package monitor tells a fleet's monitoring what the host that ran
// COMMAND did: healthchecks.io-style pings (Pinger) and a node_exporter
// textfile of gauges (WriteTextfile). Only the host that runs COMMAND pings,
// so that silence means nobody ran; neither ever changes leaderrun's exit
// status, and neither is waited for before the stop or the release.
package monitor
