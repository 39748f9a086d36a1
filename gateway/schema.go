package gateway

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentauth/agentauth/wire"
)

// validate checks tools/call arguments against the tool's inputSchema
// (JSON Schema 2020-12 or draft-07) before the backend sees them: -32602
// naming the failing schema location. Arguments nested deeper than
// MaxArgumentDepth are refused unchecked, and so is a call of a tool whose
// schema serve cannot check (checkSchema). The tool is one the backend
// listed (listedTool runs first).
func (m *Mount) validate(p toolsCallParams) *wire.Error {
	if d := depth(p.Arguments); d > MaxArgumentDepth {
		return wire.Errorf(wire.CodeInvalidParams, "invalid params: the arguments of %s nest %d deep, more than %d", p.Name, d, MaxArgumentDepth)
	}
	if name, ok := ambiguousMember(p.Arguments); ok {
		return wire.Errorf(wire.CodeInvalidParams, "invalid params: the arguments of %s name the member %q twice (names that differ only in case count as one: a backend decoding them case-insensitively could take either)", p.Name, name)
	}
	ts, ok := m.tools.get(p.Name)
	if !ok {
		return wire.Errorf(wire.CodeInvalidParams, "invalid params: unknown tool %s", wire.QuoteValue(p.Name))
	}
	if ts.refusal != "" {
		return wire.Errorf(wire.CodeInvalidParams, "invalid params: serve cannot check the arguments of tool %s of backend %s, and calls it only checked: %s", p.Name, m.b.Name, ts.refusal)
	}
	if ts.numeric {
		if lit, ok := inexactNumber(p.Arguments); ok {
			return wire.Errorf(wire.CodeInvalidParams, "invalid params: the arguments of %s hold the number %s, which serve cannot check exactly against its inputSchema: send at most 15 significant digits, within ±1e-307 to ±1e308", p.Name, shorten(lit, 40))
		}
	}
	if ts.flat != nil && ts.flat.accepts(p.Arguments) {
		return nil
	}
	res := ts.res
	var args any = map[string]any{}
	if len(p.Arguments) > 0 && string(p.Arguments) != "null" {
		if err := json.Unmarshal(p.Arguments, &args); err != nil {
			return wire.Errorf(wire.CodeInvalidParams, "invalid params: the arguments of %s are not JSON", p.Name)
		}
	}
	if err := res.Validate(args); err != nil {
		return wire.Errorf(wire.CodeInvalidParams, "invalid params: the arguments of %s do not match its inputSchema: %s", p.Name, schemaError(err, res, args))
	}
	return nil
}

// schemaError shortens jsonschema-go's nested "validating …: " prefixes
// to the innermost schema location and the reason, and names the argument
// that location checks in args, which res refused (argumentPath, given
// every location of the chain).
func schemaError(err error, res *jsonschema.Resolved, args any) string {
	s := err.Error()
	refusal := s
	var locs []string
	for {
		rest, ok := strings.CutPrefix(s, "validating ")
		if !ok {
			break
		}
		i := strings.Index(rest, ": ")
		if i < 0 {
			break
		}
		locs, s = append(locs, rest[:i]), rest[i+2:]
	}
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "") + "…"
	}
	if len(locs) == 0 || locs[len(locs)-1] == "root" {
		return "the arguments: " + s
	}
	loc := locs[len(locs)-1]
	return fmt.Sprintf("argument %s (schema %s): %s", argumentPath(locs, argumentWalk{res: res, args: args, refusal: refusal}), loc, s)
}

// pointerUnescape undoes a JSON Pointer token's escapes (RFC 6901 §4).
var pointerUnescape = strings.NewReplacer("~1", "/", "~0", "~")

// argumentPath is the argument a chain of schema locations checks, written
// as a caller names it. Each location is a JSON Pointer into the
// inputSchema (RFC 6901) or "root", as jsonschema-go reports the schema of
// each nested validation, outermost first: one step deeper each, by a
// keyword (/properties/edits, then /properties/edits/items) or by a $ref
// (to /$defs/point, or back to /properties/self), which moves in the
// schema but not in the arguments. Written as a caller would:
// /properties/edits/items/properties/oldText is edits[2].oldText,
// /prefixItems/0 is [0], additionalProperties and patternProperties are
// .*; applicators (allOf/anyOf/oneOf/not, if/then/else) and $refs add
// nothing. jsonschema-go reports no instance location, hence this: w
// follows the arguments along the chain, and at an items step names the
// element the refusal came from (refusedElement). Where it cannot follow
// (after additionalProperties or not, or without the schema and the
// arguments) an element is written [].
func argumentPath(locs []string, w argumentWalk) string {
	w.inst, w.following = w.args, w.res != nil && w.args != nil
	at := "" // the location walked to; "" is the root
	for _, loc := range locs {
		if loc == "root" {
			loc = ""
		}
		switch {
		case loc == at:
		case strings.HasPrefix(loc, at+"/"):
			tokens := strings.Split(loc[len(at)+1:], "/")
			if tokens[0] == "$defs" || tokens[0] == "definitions" {
				// A $ref to a definition: the walk goes on inside it.
				tokens = tokens[min(2, len(tokens)):]
			}
			w.walk(tokens)
		default:
			// A $ref elsewhere (a definition, or # and a pointer back up
			// the schema): the arguments stay where they are.
		}
		at = loc
	}
	return cmpOr(w.b.String(), "arguments")
}

// argumentWalk is argumentPath's place in the arguments: the path written
// so far, and, while following is true, the argument it names (inst) and
// the way to it from args (path: member names and indices).
type argumentWalk struct {
	res     *jsonschema.Resolved // the inputSchema that refused args
	args    any
	refusal string // res's error for args, whole
	b       strings.Builder
	inst    any
	path    []any
	// following is whether inst is known.
	following bool
}

// walk takes the steps of tokens (escaped JSON Pointer tokens).
func (w *argumentWalk) walk(tokens []string) {
	for i := 0; i < len(tokens); i++ {
		t, next := pointerUnescape.Replace(tokens[i]), ""
		if i+1 < len(tokens) {
			next = pointerUnescape.Replace(tokens[i+1])
		}
		switch t {
		case "properties":
			if i+1 < len(tokens) {
				i++
				if w.b.Len() > 0 {
					w.b.WriteByte('.')
				}
				w.b.WriteString(next)
				if w.following {
					m, ok := w.inst.(map[string]any)
					w.inst, w.following, w.path = m[next], ok, append(w.path, next)
				}
			}
		case "items":
			idx := -1
			if arr, ok := w.inst.([]any); w.following && ok {
				idx = w.refusedElement(len(arr))
			}
			if idx < 0 {
				w.b.WriteString("[]")
				w.following = false
				break
			}
			w.b.WriteString("[" + strconv.Itoa(idx) + "]")
			w.inst, w.path = w.inst.([]any)[idx], append(w.path, idx)
		case "additionalItems", "unevaluatedItems", "contains":
			w.b.WriteString("[]")
			w.following = false
		case "prefixItems":
			if i+1 < len(tokens) {
				i++
				w.b.WriteString("[" + next + "]")
				if w.following {
					n, err := strconv.Atoi(next)
					arr, ok := w.inst.([]any)
					w.following = err == nil && ok && n >= 0 && n < len(arr)
					if w.following {
						w.inst, w.path = arr[n], append(w.path, n)
					}
				}
			}
		case "additionalProperties", "unevaluatedProperties", "propertyNames":
			w.b.WriteString(".*")
			w.following = false
		case "patternProperties":
			i++ // the pattern
			w.b.WriteString(".*")
			w.following = false
		case "allOf", "anyOf", "oneOf":
			i++ // the index is no argument; the argument stays
		case "dependentSchemas", "$defs", "definitions":
			i++ // the keyword's name is no argument
			w.following = false
		case "then", "else", "if":
			// the argument stays
		default:
			w.following = false
		}
	}
}

// maxElementSearch bounds the arrays whose refused element is looked for
// (refusedElement); in a longer one it is written [].
const maxElementSearch = 4096

// refusedElement is the index of the element of the array at w.path (of n
// elements) that the refusal came from, or -1. jsonschema-go checks an
// array's items in order, before its other array keywords, and stops at
// the first it refuses: so the arguments with that array cut to its first
// k elements are refused in the same words exactly when k is past that
// element. (Not so where a check made before the items refuses a shorter
// array, an enum or const of the array or a minItems under its allOf: then
// a later element may be named.) The search validates the arguments, with
// the array cut, ⌈log2(n+1)⌉ times at most (13 for maxElementSearch),
// with the tool's own resolved schema: no copy of it is made, whatever its
// size, and $refs resolve as everywhere else. Only on the error path.
func (w *argumentWalk) refusedElement(n int) int {
	if n == 0 || n > maxElementSearch {
		return -1
	}
	same := func(k int) bool {
		err := w.res.Validate(cutArray(w.args, w.path, k))
		return err != nil && err.Error() == w.refusal
	}
	// The smallest k in [1, n] with same(k). sort.Search returns an i below
	// n only after same(i+1) held; n means it never did.
	if i := sort.Search(n, func(i int) bool { return same(i + 1) }); i < n {
		return i
	}
	return -1
}

// cutArray is v with the array at path (member names and indices) cut to
// its first k elements; the maps and arrays on the way are copied, v is
// not changed.
func cutArray(v any, path []any, k int) any {
	if len(path) == 0 {
		return v.([]any)[:k]
	}
	switch step := path[0].(type) {
	case string:
		m := maps.Clone(v.(map[string]any))
		m[step] = cutArray(m[step], path[1:], k)
		return m
	default:
		a := slices.Clone(v.([]any))
		i := step.(int)
		a[i] = cutArray(a[i], path[1:], k)
		return a
	}
}
