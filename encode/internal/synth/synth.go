// Package synth provides a synthetic corpus and a synthetic tokenizer for
// measuring the encode pipeline apart from any real tokenizer.
package synth

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
)

// words is a small English-like vocabulary with some non-ASCII text, so the
// corpus exercises JSON escapes and multi-byte UTF-8.
var words = strings.Fields(`the of and to in a is that for it as was with be by on not he I this are or his
from at which but have an they you were her she there been one all we their has would when if more no
out so said what up its about into than them can only other new some could time these two may then do
first any my now such like our over man me even most made after also did many before must through back
years where much your way well down should because each just those people how too little state good very
make world still own see men work long get here between both life being under never day same another
know while last might us great old year off come since against go came right used take three states
himself few house use during without again place around however home small found thought went say part
once general high upon school every don't does got united left number course war until always away something
fact though water less public put think almost hand enough far took head yet government system better set
told nothing night end why called didn't eyes find going look asked later knew point next program city
données für naïve café résumé 日本語 東京 "quoted" back\slash tab	here Ünïcödé 😀 α β γ δ`)

// WriteCorpus writes JSONL documents of random words, about size bytes in
// all, deterministically from seed. Document lengths vary from a few words
// to several thousand, like web text.
func WriteCorpus(w io.Writer, size int64, seed uint64) (documents int64, err error) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	bw := bufio.NewWriterSize(w, 1<<20)
	var written int64
	var text strings.Builder
	for written < size {
		text.Reset()
		n := 20 + int(r.ExpFloat64()*350)
		for k := 0; k < n; k++ {
			if k > 0 {
				if r.IntN(12) == 0 {
					text.WriteString(".\n")
				} else {
					text.WriteByte(' ')
				}
			}
			text.WriteString(words[r.IntN(len(words))])
		}
		js, err := json.Marshal(text.String())
		if err != nil {
			return documents, err
		}
		m, err := fmt.Fprintf(bw, "{\"id\": %d, \"text\": %s}\n", documents, js)
		if err != nil {
			return documents, err
		}
		written += int64(m)
		documents++
	}
	return documents, bw.Flush()
}

// Encode is a stand-in tokenizer with the shape of a byte-level BPE with a
// word cache: it splits text into words and runs of spaces or punctuation,
// hashes each piece, and emits one id per four bytes of the piece, with a
// BOS id first. It is much faster than a real BPE, which makes it a
// demanding baseline for measuring the pipeline's own overhead.
func Encode(dst []int32, text string) []int32 {
	dst = append(dst, 1)
	start := 0
	for start < len(text) {
		end := start + 1
		word := isWordByte(text[start])
		for end < len(text) && isWordByte(text[end]) == word {
			end++
		}
		piece := text[start:end]
		h := uint32(2166136261)
		for i := 0; i < len(piece); i++ {
			h = (h ^ uint32(piece[i])) * 16777619
			if i%4 == 3 {
				dst = append(dst, int32(3+h%31997))
			}
		}
		if len(piece)%4 != 0 {
			dst = append(dst, int32(3+h%31997))
		}
		start = end
	}
	return dst
}

func isWordByte(c byte) bool {
	return c >= 0x80 || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
