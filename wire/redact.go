package wire

// RedactTarget hides a connection token (?tkn=…) in a target shown to
// people, the way DialTarget's errors do.
func RedactTarget(target string) string { return redactTarget(target) }
