package tokenizer_test

import (
	"fmt"
	"log"

	"github.com/rivalbench/rival/tokenizer"
)

func ExampleLoad() {
	tk, err := tokenizer.Load("testdata/qwen-2.5/tokenizer.json")
	if err != nil {
		log.Fatal(err)
	}
	ids := tk.Encode("Hello, world!")
	fmt.Println(ids, tk.Decode(ids))
	// Output: [9707 11 1879 0] Hello, world!
}

func ExampleTokenizer_EncodeWithSpecial() {
	tk, err := tokenizer.Load("testdata/mistral-7b-v0.1/tokenizer.json")
	if err != nil {
		log.Fatal(err)
	}
	bos, _ := tk.TokenID("<s>")
	fmt.Println(bos, tk.EncodeWithSpecial("Hello"))
	// Output: 1 [1 22557]
}

func ExampleTokenizer_AppendEncode() {
	tk, err := tokenizer.Load("testdata/qwen-2.5/tokenizer.json")
	if err != nil {
		log.Fatal(err)
	}
	eod, _ := tk.TokenID("<|endoftext|>")
	var buf []int32
	for _, doc := range []string{"first document", "second"} {
		buf = tk.AppendEncode(buf, doc, true)
		buf = append(buf, int32(eod))
	}
	fmt.Println(buf)
	// Output: [3896 2197 151643 5569 151643]
}

func ExampleTokenizer_EncodeBatch() {
	tk, err := tokenizer.Load("testdata/qwen-2.5/tokenizer.json")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tk.EncodeBatch([]string{"one", "two", "three"}, 0), tk.VocabSize())
	// Output: [[603] [19789] [27856]] 151665
}
