package cmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/leaderrun/leaderrun/doctor"
)

const testKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

// doctor's usage errors exit 3, as its help says, not leaderrun's usual 64.
func TestDoctorUsage(t *testing.T) {
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "")
	t.Setenv("AZURE_STORAGE_ACCOUNT", "acct")
	t.Setenv("AZURE_STORAGE_KEY", testKey)
	tests := []struct {
		name string
		args []string
		env  string // LEADERRUN_LEASE_DURATION
		want string
	}{
		{"unknown flag", []string{"doctor", "--bogus"}, "", "unknown flag: --bogus"},
		{"extra argument", []string{"doctor", "extra"}, "", "unexpected arguments"},
		{"output", []string{"doctor", "-o", "yaml"}, "", "--output"},
		{"lease duration", []string{"doctor", "--lease-duration", "5s"}, "", "lease duration"},
		{"lease duration from the environment", []string{"doctor"}, "soon", "LEADERRUN_LEASE_DURATION"},
		{"kill grace", []string{"doctor", "--kill-grace", "-1s"}, "", "--kill-grace"},
		{"container", []string{"doctor", "--container", "No"}, "", "container name"},
		{"reserved lease name", []string{"doctor", "-l", "a~b"}, "", "reserved"},
		{"log level", []string{"doctor", "--log-level", "loud"}, "", "log-level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("LEADERRUN_LEASE_DURATION", tt.env)
			code, out, stderr := run(t, tt.args...)
			if code != 3 || !strings.Contains(stderr, tt.want) || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 3 and %q", code, out, stderr, tt.want)
			}
			if strings.Contains(stderr, testKey[:20]) {
				t.Error("the key is in the output")
			}
		})
	}
}

// Storage that does not answer: the endpoint check fails, exit 2.
func TestDoctorUnreachable(t *testing.T) {
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "")
	t.Setenv("AZURE_STORAGE_ACCOUNT", "devstoreaccount1")
	t.Setenv("AZURE_STORAGE_KEY", testKey)
	code, out, stderr := run(t, "doctor", "--endpoint", "http://127.0.0.1:1/devstoreaccount1", "-o", "json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 2 || rep.OK {
		t.Fatalf("exit %d, %v: %s %s", code, err, out, stderr)
	}
	found := false
	for _, c := range rep.Checks {
		if c.Name == doctor.CheckEndpoint {
			found = c.Status == "failed" && strings.Contains(c.Detail, "http://127.0.0.1:1/devstoreaccount1/leaderrun")
		}
	}
	if !found {
		t.Errorf("no failed endpoint check: %s", out)
	}
	if strings.Contains(out+stderr, testKey[:20]) {
		t.Error("the key is in the output")
	}
}

func TestDoctorExit(t *testing.T) {
	ok := doctor.Check{Name: "read", Status: doctor.CheckOK, Detail: "allowed"}
	warn := doctor.Check{Name: "clock", Status: doctor.CheckWarning, Detail: "3m0s behind"}
	fail := doctor.Check{Name: "create", Status: doctor.CheckFailed, Detail: "refused"}
	tests := []struct {
		checks []doctor.Check
		code   int
		jsonOK bool
		line   string
	}{
		{[]doctor.Check{ok}, 0, true, ""},
		{[]doctor.Check{ok, warn}, 1, true, "with warnings: clock"},
		{[]doctor.Check{warn, fail, ok}, 2, false, "refused: create"},
	}
	for _, tt := range tests {
		err := doctorExit(tt.checks)
		if got := exitCode(err); got != tt.code {
			t.Errorf("%v: exit %d, want %d", tt.checks, got, tt.code)
		}
		if tt.line != "" && (err == nil || !strings.Contains(err.Error(), tt.line)) {
			t.Errorf("%v: line %v, want %q", tt.checks, err, tt.line)
		}
		if rep := doctorJSON(tt.checks); rep.OK != tt.jsonOK || len(rep.Checks) != len(tt.checks) {
			t.Errorf("%v: JSON %+v", tt.checks, rep)
		}
	}

	var b bytes.Buffer
	writeDoctorTable(&b, []doctor.Check{ok, warn, fail})
	want := "CHECK   STATUS   DETAIL\n" +
		"read    ok       allowed\n" +
		"clock   WARNING  3m0s behind\n" +
		"create  FAILED   refused\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := writeJSON(&b, doctorJSON(nil)); err != nil || !strings.Contains(b.String(), `"checks": []`) {
		t.Errorf("JSON of no checks: %s", b.String())
	}
}
