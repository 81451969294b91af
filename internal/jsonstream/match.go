package jsonstream

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// modeSet is a bit set of modes; several declared paths (e.g. "*" and "a")
// may match the same concrete path, in which case their modes are united.
type modeSet uint8

const (
	bitSet modeSet = 1 << iota
	bitAppend
	bitTextDelta
)

func modeBit(m Mode) (modeSet, bool) {
	switch m {
	case Set:
		return bitSet, true
	case Append:
		return bitAppend, true
	case TextDelta:
		return bitTextDelta, true
	}
	return 0, false
}

// node is a trie node of the declared paths.
type node struct {
	id       int
	children map[string]*node // literal segments
	wild     *node            // "*" segment
	modes    modeSet
}

// dstate is a lazily built deterministic matching state: the set of trie
// nodes reached by the concrete path so far. A nil *dstate means "no declared
// path can match here or below" (the subtree is only validated).
type dstate struct {
	nodes []*node
	modes modeSet
	// leaf reports that no node has children: nothing below can match.
	leaf bool
	// keys is the union of the literal child segments of nodes; a key not in
	// it can only follow wildcards (def).
	keys     map[string]struct{}
	explicit map[string]*dstate // cached transitions for keys in keys
	def      *dstate            // cached transition for any other key
	defReady bool
}

// matcher owns the trie and the interned matching states.
type matcher struct {
	root   *node
	start  *dstate
	states map[string]*dstate // interned by sorted node ids
	nextID int
}

func newMatcher(fields map[string]Mode) (*matcher, error) {
	m := &matcher{states: map[string]*dstate{}}
	m.root = m.newNode()
	// Deterministic error reporting: validate in sorted order.
	paths := make([]string, 0, len(fields))
	for p := range fields {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		bit, ok := modeBit(fields[p])
		if !ok {
			return nil, fmt.Errorf("jsonstream: field %q: unknown mode %q (want %q, %q or %q)", p, fields[p], Set, Append, TextDelta)
		}
		if p == "" {
			return nil, fmt.Errorf("jsonstream: field %q: empty path", p)
		}
		n := m.root
		for _, seg := range strings.Split(p, ".") {
			if seg == "" {
				return nil, fmt.Errorf("jsonstream: field %q: empty path segment", p)
			}
			if seg == "*" {
				if n.wild == nil {
					n.wild = m.newNode()
				}
				n = n.wild
				continue
			}
			if n.children == nil {
				n.children = map[string]*node{}
			}
			c := n.children[seg]
			if c == nil {
				c = m.newNode()
				n.children[seg] = c
			}
			n = c
		}
		n.modes |= bit
	}
	m.start = m.intern([]*node{m.root})
	return m, nil
}

func (m *matcher) newNode() *node {
	m.nextID++
	return &node{id: m.nextID}
}

// intern returns the unique state for a set of nodes (nil for the empty set).
func (m *matcher) intern(nodes []*node) *dstate {
	if len(nodes) == 0 {
		return nil
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].id < nodes[j].id })
	// Drop duplicates (a node may be reached through a literal and a wildcard).
	out := nodes[:1]
	for _, n := range nodes[1:] {
		if n != out[len(out)-1] {
			out = append(out, n)
		}
	}
	var kb strings.Builder
	for _, n := range out {
		kb.WriteString(strconv.Itoa(n.id))
		kb.WriteByte(',')
	}
	key := kb.String()
	if s := m.states[key]; s != nil {
		return s
	}
	s := &dstate{nodes: out, leaf: true}
	for _, n := range out {
		s.modes |= n.modes
		if n.wild != nil || len(n.children) > 0 {
			s.leaf = false
		}
		for k := range n.children {
			if s.keys == nil {
				s.keys = map[string]struct{}{}
				s.explicit = map[string]*dstate{}
			}
			s.keys[k] = struct{}{}
		}
	}
	m.states[key] = s
	return s
}

// step returns the state reached from s by the path segment key.
func (m *matcher) step(s *dstate, key []byte) *dstate {
	if s == nil || s.leaf {
		return nil
	}
	if s.keys != nil {
		if _, ok := s.keys[string(key)]; ok {
			if next, ok := s.explicit[string(key)]; ok {
				return next
			}
			k := string(key)
			var nodes []*node
			for _, n := range s.nodes {
				if c := n.children[k]; c != nil {
					nodes = append(nodes, c)
				}
				if n.wild != nil {
					nodes = append(nodes, n.wild)
				}
			}
			next := m.intern(nodes)
			s.explicit[k] = next
			return next
		}
	}
	return m.stepDefault(s)
}

// stepDefault is the transition for a key no literal segment names.
func (m *matcher) stepDefault(s *dstate) *dstate {
	if !s.defReady {
		var nodes []*node
		for _, n := range s.nodes {
			if n.wild != nil {
				nodes = append(nodes, n.wild)
			}
		}
		s.def = m.intern(nodes)
		s.defReady = true
	}
	return s.def
}

// stepIndex is step for an array index; it formats the index only when some
// literal segment could name it.
func (m *matcher) stepIndex(s *dstate, idx int, scratch []byte) *dstate {
	if s == nil || s.leaf {
		return nil
	}
	if s.keys == nil {
		return m.stepDefault(s)
	}
	return m.step(s, strconv.AppendInt(scratch[:0], int64(idx), 10))
}
