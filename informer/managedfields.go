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
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return data
	}
	i++
	for {
		i = skipSpace(data, i)
		key, next, ok := readString(data, i)
		if !ok {
			return data
		}
		i = skipSpace(data, next)
		if i >= len(data) || data[i] != ':' {
			return data
		}
		i = skipSpace(data, i+1)
		if string(key) == "metadata" {
			return cutMember(data, i, "managedFields")
		}
		end, ok := skipValue(data, i)
		if !ok {
			return data
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ',' {
			return data
		}
		i++
	}
}

// cutMember returns data without the member name of the object that starts
// at data[obj], or data itself when the object has no such member or is
// not well formed.
func cutMember(data []byte, obj int, name string) []byte {
	if obj >= len(data) || data[obj] != '{' {
		return data
	}
	i := obj + 1
	prevComma := -1 // the comma before the current member, if any
	for {
		i = skipSpace(data, i)
		start := i
		key, next, ok := readString(data, i)
		if !ok {
			return data
		}
		i = skipSpace(data, next)
		if i >= len(data) || data[i] != ':' {
			return data
		}
		end, ok := skipValue(data, skipSpace(data, i+1))
		if !ok {
			return data
		}
		after := skipSpace(data, end)
		if after >= len(data) {
			return data
		}
		if string(key) == name {
			var from, to int
			switch {
			case data[after] == ',': // a member follows: cut up to it
				from, to = start, after+1
			case prevComma >= 0: // the last member: cut from the comma before it
				from, to = prevComma, end
			default: // the only member
				from, to = start, end
			}
			out := make([]byte, 0, len(data)-(to-from))
			return append(append(out, data[:from]...), data[to:]...)
		}
		if data[after] != ',' {
			return data // the end of the object (or bad JSON): no such member
		}
		prevComma, i = after, after+1
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
