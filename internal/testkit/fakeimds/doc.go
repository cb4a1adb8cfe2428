// Package fakeimds is a stand-in for Azure's Instance Metadata Service, for
// tests, end-to-end scripts and chaos runs: one Server per simulated VM.
//
// It listens on 127.0.0.1 only and answers the two requests leaderrun makes:
// the VM's name (GET /metadata/instance/compute/name, format=text) and the
// scheduled events (GET /metadata/scheduledevents). Like the real service it
// refuses a request without "Metadata: true" (400). It refuses every POST
// (405) and records it (Counts.Posts): the real service would take a POST to
// scheduledevents as an approval, which leaderrun must never send. Any other
// path is 404. Every request is counted.
//
// The events document is set with SetEvents, AddEvent, AddPreempt and
// Clear; each change increments DocumentIncarnation, as the real service
// does. SetFailure and SetDelay make it fail or answer slowly; SetRaw makes it
// serve any body for the events.
package fakeimds
