package wire

// Members calls f with the name (unescaped) and the raw value of each
// member of the JSON object obj, in order: names are read and values
// skipped without being decoded, for a caller that needs a few members
// of a message it must not parse twice. obj must be valid JSON (a part of
// a message Decode accepted, or checked with json.Valid): Members does
// not check it and stops early on malformed input. It does nothing for a
// value that is not an object.
func Members(obj []byte, f func(name, value []byte)) { eachMember(obj, f) }

// Elements calls f with the raw value of each element of the JSON array
// arr, in order; as Members, it expects valid JSON and does nothing for a
// value that is not an array.
func Elements(arr []byte, f func(value []byte)) {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return
	}
	i = skipSpace(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return
	}
	for {
		end := valueEnd(arr, i)
		if end < 0 {
			return
		}
		f(arr[i:end])
		i = skipSpace(arr, end)
		if i >= len(arr) || arr[i] != ',' {
			return
		}
		i = skipSpace(arr, i+1)
	}
}
