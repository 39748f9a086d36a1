package hostile

import "strings"

// Name modes: how the backend matches a called name to a listed tool.
func init() {
	// loose-names: case-insensitive, surrounding blanks trimmed, as a
	// backend that normalises names does: "Admin_Delete", " admin_delete"
	// and "admin_delete\n" all run admin_delete.
	modes["loose-names"] = func(b *backend) {
		b.lookup = func(name string) (tool, bool) {
			name = strings.TrimSpace(name)
			for _, t := range b.tools {
				if strings.EqualFold(t.Name, name) {
					return t, true
				}
			}
			return tool{}, false
		}
	}
}
