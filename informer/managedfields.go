package informer

// withoutManagedFields returns data, a JSON object, without the
// "managedFields" member of its top-level "metadata" object, so that the
// typed path with Config.DropManagedFields never decodes what it would drop
// (on objects written with server-side apply, managedFields take more than
// half of an object's decoding time). It returns data itself when there is
// no such member or when data is not the JSON it expects: the decoder then
// sees the original bytes, and the informer's transform drops the field.
// It never modifies data.
func withoutManagedFields(data []byte) []byte {
	out := data
	objectMembers(data, skipSpace(data, 0), func(m member) bool {
		if string(m.key) != "metadata" {
			return true
		}
		out = cutMember(data, m.value, "managedFields")
		return false
	})
	return out
}

// cutMember returns data without the member name of the object that starts
// at data[obj], or data itself when the object has no such member or is
// not well formed.
func cutMember(data []byte, obj int, name string) []byte {
	out := data
	objectMembers(data, obj, func(m member) bool {
		if string(m.key) != name {
			return true
		}
		end, ok := skipValue(data, m.value)
		after := skipSpace(data, end)
		if !ok || after >= len(data) {
			return false
		}
		from, to := m.start, end // the only member
		switch {
		case data[after] == ',': // a member follows: cut up to it
			to = after + 1
		case m.comma >= 0: // the last member: cut from the comma before it
			from = m.comma
		}
		out = append(append(make([]byte, 0, len(data)-(to-from)), data[:from]...), data[to:]...)
		return false
	})
	return out
}

// member is one member of a JSON object, as objectMembers finds it: its
// raw key, the index of the key's opening quote (start), of the value's
// first byte (value), and of the comma before the member (comma; -1 for the
// first member).
type member struct {
	key                 []byte
	start, value, comma int
}

// objectMembers calls f for each member of the JSON object that starts at
// data[obj], in order, until f returns false, the object ends, or it turns
// out not to be well formed. A member's value is skipped only after f
// returned true, so that f may read it instead.
func objectMembers(data []byte, obj int, f func(m member) bool) {
	if obj >= len(data) || data[obj] != '{' {
		return
	}
	i, comma := obj+1, -1
	for {
		start := skipSpace(data, i)
		key, next, ok := readString(data, start)
		if !ok {
			return
		}
		i = skipSpace(data, next)
		if i >= len(data) || data[i] != ':' {
			return
		}
		m := member{key: key, start: start, value: skipSpace(data, i+1), comma: comma}
		if !f(m) {
			return
		}
		end, ok := skipValue(data, m.value)
		if !ok {
			return
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ',' {
			return
		}
		comma, i = i, i+1
	}
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// readString reads the JSON string that starts at data[i] and returns its
// raw content (escapes not decoded) and the index after its closing quote.
func readString(data []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(data) || data[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return data[i+1 : j], j + 1, true
		}
	}
	return nil, 0, false
}

// skipValue returns the index after the JSON value that starts at data[i].
// It checks only what it needs to find the value's end.
func skipValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return 0, false
	}
	switch data[i] {
	case '"':
		_, next, ok := readString(data, i)
		return next, ok
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				_, next, ok := readString(data, j)
				if !ok {
					return 0, false
				}
				j = next - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	default: // a number, true, false or null
		j := i
		for j < len(data) {
			switch data[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return j, j > i
			}
			j++
		}
		return j, j > i
	}
}
