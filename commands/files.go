package commands

import "github.com/agentauth/agentauth/internal/atomicfile"

// writeFileAtomic writes data to a temporary file beside path and renames
// it into place, so a reader never sees a partial file (atomicfile.Write).
func writeFileAtomic(path string, data []byte) error { return atomicfile.Write(path, data) }
