// Command gen writes Rival's sample corpus: prose the project generates
// itself from a seeded grammar, so the demo and tests need no download and
// carry no third-party licence. Regenerate with
//
//	go run ./testdata/sample/gen > testdata/sample/corpus.jsonl
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
)

var (
	subjects = []string{"the cluster", "our team", "the scheduler", "each node", "the operator", "a careful engineer",
		"the training job", "the benchmark", "the storage system", "every accelerator", "the data pipeline", "the new rack"}
	verbs = []string{"measured", "compared", "rebuilt", "cached", "verified", "scheduled", "profiled", "logged",
		"tuned", "restarted", "reported", "recorded", "shuffled", "tokenized", "replayed", "checked"}
	objects = []string{"the step time", "every checkpoint", "the loss curve", "the learning rate", "the memory peak",
		"the power draw", "the token count", "the global batch", "the gradient norm", "the sequence length",
		"the warm-up phase", "the cosine schedule", "the random seed", "the data shards", "the results table"}
	adverbs = []string{"quietly", "twice", "again", "carefully", "overnight", "before lunch", "at dawn",
		"without complaint", "in under an hour", "with great patience", "for the third time"}
	clauses = []string{"because the numbers had to be fair", "so that nobody could doubt the result",
		"while the fans roared in the hall", "after the firmware update", "once the queue had drained",
		"even though the deadline was close", "since the last run had diverged", "as the report demanded",
		"when the second host came online", "before anyone read the plots"}
	openers = []string{"In the morning,", "Later that week,", "Meanwhile,", "At first,", "By the evening,",
		"Without much fuss,", "On the second day,", "Eventually,", "Once again,", "For the record,"}
	numbers = []string{"8", "16", "42", "128", "2048", "4096", "0.95", "3.0e-4", "1,024", "99.5%", "12.5", "1.42×"}
)

func pick(r *rand.Rand, s []string) string { return s[r.IntN(len(s))] }

func sentence(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(3) == 0 {
		b.WriteString(pick(r, openers) + " ")
	}
	s := pick(r, subjects)
	if b.Len() == 0 {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	b.WriteString(s + " " + pick(r, verbs) + " " + pick(r, objects))
	switch r.IntN(4) {
	case 0:
		b.WriteString(" " + pick(r, adverbs))
	case 1:
		b.WriteString(" " + pick(r, clauses))
	case 2:
		b.WriteString(" at " + pick(r, numbers) + " per step")
	}
	if r.IntN(8) == 0 {
		return b.String() + "?"
	}
	return b.String() + "."
}

func main() {
	r := rand.New(rand.NewPCG(42, 7))
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	for doc := 0; doc < 600; doc++ {
		var paras []string
		// A few documents are deliberately too short, so filter has work.
		nSent := 4 + r.IntN(14)
		if doc%25 == 3 {
			nSent = 1
		}
		for p := 0; p < 1+nSent/6; p++ {
			var sents []string
			for i := 0; i < 1+nSent/(1+nSent/6); i++ {
				sents = append(sents, sentence(r))
			}
			paras = append(paras, strings.Join(sents, " "))
		}
		if err := enc.Encode(map[string]string{"text": strings.Join(paras, "\n\n")}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
