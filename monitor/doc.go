// Package monitor tells a fleet's monitoring what the host that ran
// COMMAND did: healthchecks.io-style pings, or another monitor's through a
// URL template (Pinger), and a node_exporter textfile of gauges
// (WriteTextfile). Only the host that runs COMMAND pings, so that silence
// means nobody ran; the end ping never lands before the start ping's last
// try; a ping goes over https (http to loopback only) and never follows a
// redirect. The textfile's path is not trusted: what lies there is never
// followed and never blocks. Neither ever changes leaderrun's exit status,
// and neither is waited for before the stop or the release.
package monitor
