package testenv

// What /proc says about a process: its stat fields.

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// StatFields are the fields of /proc/PID/stat after "pid (comm)": state,
// ppid, pgrp, ...; nil when the process or /proc is not there.
func StatFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}
