package indexed

import "fmt"

// DType is the element type code stored in the .idx header.
type DType uint8

// The codes Megatron assigns to numpy element types. They are part of the
// file format and must never change.
const (
	Uint8   DType = 1
	Int8    DType = 2
	Int16   DType = 3
	Int32   DType = 4
	Int64   DType = 5
	Float64 DType = 6
	Float32 DType = 7
	Uint16  DType = 8
)

// uint16VocabLimit is Megatron's threshold: vocabularies strictly below it
// are stored as uint16, larger ones as int32.
const uint16VocabLimit = 65500

// DTypeForVocab returns the dtype Megatron picks for a vocabulary of the given
// size (added tokens included).
func DTypeForVocab(vocabSize int) DType {
	if vocabSize < uint16VocabLimit {
		return Uint16
	}
	return Int32
}

// Size is the number of bytes one element occupies; 0 for an unknown code.
func (d DType) Size() int {
	switch d {
	case Uint8, Int8:
		return 1
	case Int16, Uint16:
		return 2
	case Int32, Float32:
		return 4
	case Int64, Float64:
		return 8
	}
	return 0
}

// Valid reports whether d is one of the eight codes Megatron defines.
func (d DType) Valid() bool { return d.Size() != 0 }

// IsInteger reports whether d can hold token ids.
func (d DType) IsInteger() bool { return d.Valid() && d != Float32 && d != Float64 }

// Range is the inclusive range of token ids the dtype can store. It is only
// meaningful for integer dtypes.
func (d DType) Range() (lo, hi int64) {
	switch d {
	case Uint8:
		return 0, 1<<8 - 1
	case Int8:
		return -1 << 7, 1<<7 - 1
	case Int16:
		return -1 << 15, 1<<15 - 1
	case Uint16:
		return 0, 1<<16 - 1
	case Int32:
		return -1 << 31, 1<<31 - 1
	case Int64:
		return -1 << 63, 1<<63 - 1
	}
	return 0, -1
}

// String names the dtype the way numpy does.
func (d DType) String() string {
	switch d {
	case Uint8:
		return "uint8"
	case Int8:
		return "int8"
	case Int16:
		return "int16"
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	case Float64:
		return "float64"
	case Float32:
		return "float32"
	case Uint16:
		return "uint16"
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}
