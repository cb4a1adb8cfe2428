// The executable the guard is started from on Linux.

package runner

// selfExe is the executable the guard is started from. /proc/self/exe names
// leaderrun's own binary even if its file was replaced or removed since.
func selfExe() (string, error) { return "/proc/self/exe", nil }
