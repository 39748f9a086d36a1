package wire

// Members calls f with the name (unescaped) and the raw value of each
// member of the JSON object obj, in order: names are read and values
// skipped without being decoded, for a caller that needs a few members
// of a message it must not parse twice. obj must be valid JSON (a part of
// a message Decode accepted, or checked with json.Valid): Members does
// not check it and stops early on malformed input. It does nothing for a
// value that is not an object.
func Members(obj []byte, f func(name, value []byte)) { eachMember(obj, f) }
