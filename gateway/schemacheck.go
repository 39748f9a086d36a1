package gateway

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// A backend's inputSchema is data serve trusts for nothing: a schema
// whose $refs loop back to themselves without descending into the
// arguments ("#/$defs/a" → "#/$defs/b" → "#/$defs/a") makes
// jsonschema-go's validation recurse until the process dies, a schema
// nested thousands deep costs seconds to decode, and applicators that
// repeat a subschema (allOf: [b, b], each b again allOf: [c, c]) cost
// work exponential in their nesting. So each schema is checked once, when
// the backend lists it (toolCache.learn), against the bounds below; a tool
// whose schema fails them, or that jsonschema-go cannot resolve, is
// refused at tools/call (Mount.validate) with the reason, never forwarded
// unchecked. jsonschema-go reports neither its $ref targets nor a way to
// bound its recursion, hence this analysis of our own.
const (
	// maxSchemaBytes bounds one tool's inputSchema as sent.
	maxSchemaBytes = 256 << 10
	// maxSchemaNesting bounds its JSON nesting (each subschema is at least
	// one level: {"properties": {"a": {…}}} is two).
	maxSchemaNesting = 128
	// maxSchemaNodes bounds its subschemas.
	maxSchemaNodes = 10_000
	// maxSchemaWork bounds the subschema evaluations that validating one
	// argument (one path down the arguments, MaxArgumentDepth deep at
	// most) can take; the whole validation is at most this many times the
	// arguments' size.
	maxSchemaWork = 1 << 20
	// maxSchemaFrames bounds the longest chain of nested subschema
	// evaluations, which is validation's recursion depth.
	maxSchemaFrames = 2_000
)

// checkSchema decodes, bounds and resolves a tool's inputSchema.
func checkSchema(raw json.RawMessage) toolSchema {
	switch {
	case len(raw) == 0:
		return toolSchema{refusal: "it lists no inputSchema"}
	case len(raw) > maxSchemaBytes:
		return toolSchema{refusal: fmt.Sprintf("its inputSchema is %d bytes, more than %d", len(raw), maxSchemaBytes)}
	}
	if d := depth(raw); d > maxSchemaNesting {
		return toolSchema{refusal: fmt.Sprintf("its inputSchema nests %d deep, more than %d", d, maxSchemaNesting)}
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return toolSchema{refusal: "its inputSchema is not a JSON Schema: " + err.Error()}
	}
	g, err := newSchemaGraph(&s)
	if err == nil {
		err = g.bound()
	}
	if err != nil {
		return toolSchema{refusal: "its inputSchema " + err.Error()}
	}
	res, err := s.Resolve(nil) // no loader: a remote $ref is refused
	if err != nil {
		return toolSchema{refusal: "its inputSchema cannot be resolved: " + err.Error()}
	}
	return toolSchema{res: res, numeric: g.numeric, flat: newFlatSchema(&s)}
}

// schemaGraph is a schema's subschemas and the ways validation goes from
// one to another: on the same argument (applicators and references), or
// down into a member or element of it (moves).
type schemaGraph struct {
	nodes []*jsonschema.Schema
	index map[*jsonschema.Schema]int
	// path is each node's JSON Pointer in the document; resource is the
	// node that is its schema resource's root (the nearest with $id, or
	// the document root), base that resource's absolute $id ("" for none).
	path     []string
	resource []int
	base     []*url.URL
	// same and moves are the edges out of each node.
	same, moves [][]int
	// byID and anchors find references' targets.
	byPath  map[string]int
	byID    map[string]int
	anchors map[[2]string]int // {resource path, anchor}
	dynamic map[string][]int  // $dynamicAnchor name → nodes
	numeric bool
}

func newSchemaGraph(root *jsonschema.Schema) (*schemaGraph, error) {
	g := &schemaGraph{index: map[*jsonschema.Schema]int{}, byPath: map[string]int{}, byID: map[string]int{},
		anchors: map[[2]string]int{}, dynamic: map[string][]int{}}
	if err := g.add(root, "", -1); err != nil {
		return nil, err
	}
	for i, s := range g.nodes {
		if s.Ref != "" {
			t, err := g.target(i, s.Ref)
			if err != nil {
				return nil, err
			}
			g.same[i] = append(g.same[i], t)
		}
		if s.DynamicRef != "" {
			t, err := g.target(i, s.DynamicRef)
			if err != nil {
				return nil, err
			}
			// Dynamically, the outermost subschema with the anchor in the
			// scope: any of them, as far as this analysis can tell.
			_, name, _ := strings.Cut(s.DynamicRef, "#")
			g.same[i] = append(append(g.same[i], t), g.dynamic[name]...)
		}
	}
	return g, nil
}

// add numbers s and, recursively, its subschemas (the recursion is
// bounded by maxSchemaNesting, checked before decoding).
func (g *schemaGraph) add(s *jsonschema.Schema, path string, parent int) error {
	if s == nil {
		return nil
	}
	if _, ok := g.index[s]; ok {
		return nil
	}
	if len(g.nodes) >= maxSchemaNodes {
		return fmt.Errorf("has more than %d subschemas", maxSchemaNodes)
	}
	i := len(g.nodes)
	g.nodes = append(g.nodes, s)
	g.index[s] = i
	g.path = append(g.path, path)
	g.byPath[path] = i
	g.same, g.moves = append(g.same, nil), append(g.moves, nil)
	resource, base := i, (*url.URL)(nil)
	if parent >= 0 {
		resource, base = g.resource[parent], g.base[parent]
	}
	if s.ID != "" {
		u, err := url.Parse(s.ID)
		if err != nil {
			return fmt.Errorf("has a $id that is no URI: %q", s.ID)
		}
		if base != nil {
			u = base.ResolveReference(u)
		}
		u.Fragment = ""
		resource, base = i, u
		g.byID[u.String()] = i
	}
	g.resource, g.base = append(g.resource, resource), append(g.base, base)
	if s.Anchor != "" {
		g.anchors[[2]string{g.path[resource], s.Anchor}] = i
	}
	if s.DynamicAnchor != "" {
		g.anchors[[2]string{g.path[resource], s.DynamicAnchor}] = i
		g.dynamic[s.DynamicAnchor] = append(g.dynamic[s.DynamicAnchor], i)
	}
	if s.Minimum != nil || s.Maximum != nil || s.ExclusiveMinimum != nil || s.ExclusiveMaximum != nil ||
		s.MultipleOf != nil || s.Enum != nil || s.Const != nil || s.Type == "integer" || slices.Contains(s.Types, "integer") {
		g.numeric = true
	}
	var err error
	eachSubschema(s, func(kw string, c *jsonschema.Schema, edge edgeKind) {
		if err != nil || c == nil {
			return
		}
		if _, seen := g.index[c]; !seen {
			if err = g.add(c, path+"/"+kw, i); err != nil {
				return
			}
		}
		switch edge {
		case edgeSame:
			g.same[i] = append(g.same[i], g.index[c])
		case edgeMove:
			g.moves[i] = append(g.moves[i], g.index[c])
		}
	})
	return err
}

type edgeKind int

const (
	edgeNone edgeKind = iota // a definition: reached by reference only
	edgeSame                 // validates the same argument
	edgeMove                 // validates a member or element of it
)

// eachSubschema calls f with each subschema of s, its JSON Pointer tokens
// from s (escaped, RFC 6901) and how validation reaches it (JSON Schema
// 2020-12 Core §10, and draft-07's items array, additionalItems and
// dependencies, which jsonschema-go reads too).
func eachSubschema(s *jsonschema.Schema, f func(kw string, c *jsonschema.Schema, edge edgeKind)) {
	each := func(kw string, m map[string]*jsonschema.Schema, edge edgeKind) {
		for _, k := range sortedKeys(m) {
			f(kw+"/"+escapePointer(k), m[k], edge)
		}
	}
	list := func(kw string, l []*jsonschema.Schema, edge edgeKind) {
		for i, c := range l {
			f(kw+"/"+strconv.Itoa(i), c, edge)
		}
	}
	each("$defs", s.Defs, edgeNone)
	each("definitions", s.Definitions, edgeNone)
	list("allOf", s.AllOf, edgeSame)
	list("anyOf", s.AnyOf, edgeSame)
	list("oneOf", s.OneOf, edgeSame)
	f("not", s.Not, edgeSame)
	f("if", s.If, edgeSame)
	f("then", s.Then, edgeSame)
	f("else", s.Else, edgeSame)
	each("dependentSchemas", s.DependentSchemas, edgeSame)
	each("dependencies", s.DependencySchemas, edgeSame)
	each("properties", s.Properties, edgeMove)
	each("patternProperties", s.PatternProperties, edgeMove)
	f("additionalProperties", s.AdditionalProperties, edgeMove)
	f("propertyNames", s.PropertyNames, edgeMove)
	f("unevaluatedProperties", s.UnevaluatedProperties, edgeMove)
	f("items", s.Items, edgeMove)
	list("items", s.ItemsArray, edgeMove)
	list("prefixItems", s.PrefixItems, edgeMove)
	f("additionalItems", s.AdditionalItems, edgeMove)
	f("contains", s.Contains, edgeMove)
	f("unevaluatedItems", s.UnevaluatedItems, edgeMove)
	f("contentSchema", s.ContentSchema, edgeNone)
}

func sortedKeys(m map[string]*jsonschema.Schema) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

var escapePointer = strings.NewReplacer("~", "~0", "/", "~1").Replace

// target is the node a reference of node i names: a JSON Pointer or an
// anchor in a schema resource of this document (RFC 3986 §5 against the
// node's base URI, JSON Schema 2020-12 Core §8.2). A reference to anything
// else is an error: jsonschema-go is given no loader, and serve fetches
// no schema a backend points at.
func (g *schemaGraph) target(i int, ref string) (int, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return 0, fmt.Errorf("has a $ref that is no URI: %q", ref)
	}
	resource := g.resource[i]
	if u.Scheme != "" || u.Host != "" || u.Path != "" || u.RawQuery != "" {
		abs := u
		if b := g.base[i]; b != nil {
			abs = b.ResolveReference(u)
		}
		abs = &url.URL{Scheme: abs.Scheme, Opaque: abs.Opaque, User: abs.User, Host: abs.Host, Path: abs.Path, RawPath: abs.RawPath, RawQuery: abs.RawQuery}
		r, ok := g.byID[abs.String()]
		if !ok {
			return 0, fmt.Errorf("has a $ref outside the schema: %q", ref)
		}
		resource = r
	}
	frag := u.Fragment
	if frag != "" && !strings.HasPrefix(frag, "/") {
		t, ok := g.anchors[[2]string{g.path[resource], frag}]
		if !ok {
			return 0, fmt.Errorf("has a $ref to no anchor: %q", ref)
		}
		return t, nil
	}
	t, ok := g.byPath[g.path[resource]+frag]
	if !ok {
		return 0, fmt.Errorf("has a $ref to no subschema: %q", ref)
	}
	return t, nil
}

// bound checks that validation of this schema ends, within maxSchemaWork
// evaluations and maxSchemaFrames nested ones. Its states are (node,
// moves left), a move spending one of the MaxArgumentDepth levels an
// argument may nest: a cycle of states never ends (it can only be a cycle
// of same-argument edges); a state's work is the evaluations it leads to,
// its frames the longest chain of them. A depth-first walk with its own
// stack, so that the walk itself does not recurse on the backend's data;
// it visits each state once, and there are at most maxSchemaWork of them,
// since each is at least one evaluation.
func (g *schemaGraph) bound() error {
	type cost struct{ work, frames int32 }
	type frame struct {
		node, left int
		next       int // the next edge: same-argument edges, then moves
		c          cost
	}
	key := func(node, left int) int { return node*(MaxArgumentDepth+1) + left }
	done := map[int]cost{}
	onStack := map[int]bool{}
	stack := []frame{{node: 0, left: MaxArgumentDepth, c: cost{1, 1}}}
	onStack[key(0, MaxArgumentDepth)] = true
	add := func(p *cost, c cost) error {
		p.work += c.work
		p.frames = max(p.frames, c.frames+1)
		switch {
		case p.work > maxSchemaWork || len(done) > maxSchemaWork:
			return fmt.Errorf("takes more than %d subschema evaluations per argument", maxSchemaWork)
		case p.frames > maxSchemaFrames:
			return fmt.Errorf("nests more than %d subschema evaluations", maxSchemaFrames)
		}
		return nil
	}
	for {
		top := &stack[len(stack)-1]
		same, moves := g.same[top.node], g.moves[top.node]
		child, left := 0, top.left
		switch {
		case top.next < len(same):
			child = same[top.next]
		case top.next < len(same)+len(moves) && top.left > 0:
			child, left = moves[top.next-len(same)], top.left-1
		default:
			k, c := key(top.node, top.left), top.c
			done[k] = c
			delete(onStack, k)
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return nil
			}
			if err := add(&stack[len(stack)-1].c, c); err != nil {
				return err
			}
			continue
		}
		top.next++
		k := key(child, left)
		if onStack[k] {
			return fmt.Errorf("refers to itself without descending into the arguments, at %q", "#"+g.path[child])
		}
		if c, ok := done[k]; ok {
			if err := add(&top.c, c); err != nil {
				return err
			}
			continue
		}
		if len(stack) >= maxSchemaFrames {
			return fmt.Errorf("nests more than %d subschema evaluations", maxSchemaFrames)
		}
		onStack[k] = true
		stack = append(stack, frame{node: child, left: left, c: cost{1, 1}})
	}
}

// learn reads the schemas of a tools/list result and returns its
// nextCursor, and the tools whose schema it newly refuses, with the
// reasons (checkSchema).
func (tc *toolCache) learn(result json.RawMessage) (cursor string, refused map[string]string) {
	var r struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
		NextCursor string `json:"nextCursor"`
	}
	if json.Unmarshal(result, &r) != nil {
		return "", nil
	}
	// The schemas are checked outside the lock, which calls need.
	tc.mu.RLock()
	held, keep := len(tc.tools), r.Tools[:0]
	for _, t := range r.Tools {
		if _, ok := tc.tools[t.Name]; !ok {
			if held >= maxTools {
				continue
			}
			held++
		}
		keep = append(keep, t)
	}
	tc.mu.RUnlock()
	checked := make([]toolSchema, len(keep))
	headers := make([]map[string]string, len(keep))
	for i, t := range keep {
		if checked[i] = checkSchema(t.InputSchema); checked[i].refusal == "" {
			headers[i] = headerArguments(t.InputSchema)
		}
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if len(keep) < len(r.Tools) {
		tc.overflow = true
	}
	for i, t := range keep {
		prev, ok := tc.tools[t.Name]
		if !ok && len(tc.tools) >= maxTools {
			tc.overflow = true
			continue
		}
		if ts := checked[i]; ts.refusal != "" && prev.refusal != ts.refusal {
			if refused == nil {
				refused = map[string]string{}
			}
			refused[t.Name] = ts.refusal
		}
		tc.tools[t.Name] = checked[i]
		delete(tc.headers, t.Name)
		if headers[i] != nil {
			tc.headers[t.Name] = headers[i]
		}
	}
	return r.NextCursor, refused
}

// headerArguments are the arguments of an inputSchema that MCP 2026-07-28
// clients repeat in Mcp-Param-NAME (x-mcp-header of a property: argument
// to NAME); nil for none.
func headerArguments(schema json.RawMessage) map[string]string {
	var props struct {
		Properties map[string]struct {
			Header string `json:"x-mcp-header"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &props) != nil {
		return nil
	}
	var h map[string]string
	for arg, p := range props.Properties {
		if p.Header != "" {
			if h == nil {
				h = map[string]string{}
			}
			h[arg] = p.Header
		}
	}
	return h
}
