// Reading the blobs of a container listing, which returns each blob's lease
// state and metadata (what one Get Blob Properties returns for one blob).

package lease

import "time"

// PropertiesOf parses a blob's lease state and metadata as a container
// listing returns them, the way Blob.Properties parses a read: keys are
// lowercased, malformed values read as absent. date is the listing's Date.
func PropertiesOf(state State, md map[string]string, date time.Time) *Properties {
	if state == "" {
		state = StateAvailable
	}
	return newProperties(state, md, date)
}
