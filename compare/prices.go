package compare

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Price is what one GPU-hour costs.
type Price struct {
	USDPerGPUHour float64
	// Low and High bound the on-demand prices the source lists for this GPU
	// (0 when it gives one figure); the cost verdict is shown over the range.
	Low, High float64
	Source    string // where the figure comes from
	Date      string // when it was read (YYYY-MM-DD)
}

// HasRange says whether the price comes with a low-high range.
func (p Price) HasRange() bool { return p.Low > 0 && p.High > p.Low }

// PriceTable maps GPU names ("H100 SXM", "MI300X", "A100", "CPU") to prices.
type PriceTable struct {
	Prices map[string]Price
	// Warnings name prices set outside PlausiblePriceLow-PlausiblePriceHigh
	// USD per GPU-hour: used as given, but probably a typo.
	Warnings []string
}

// A price per GPU-hour outside this range is used but warned about: no
// cloud lists a GPU-hour at a cent or above a hundred dollars.
const PlausiblePriceLow, PlausiblePriceHigh = 0.01, 100.0

// priceSource is the public note the defaults were read from: it lists the
// providers' own on-demand list prices per GPU-hour.
const priceSource = "https://www.cliffcenter.com/research/amd-inference-economics"

// DefaultPrices are on-demand list prices per GPU-hour, as quoted on
// 2026-05-18 by the note at priceSource: Lambda's H100 SXM at $2.99, Vultr's
// MI300X at $1.85 and TensorWave's MI325X at $1.95. The same note lists the
// providers' range, MI300X $1.50-$6.00 and H100 $2.99-$6.00 (medians $1.99
// and $3.49). Prices move; override with PRICE_<GPU>=<USD per GPU-hour> (see
// ParsePriceEnv).
func DefaultPrices() PriceTable {
	const date = "2026-05-18"
	return PriceTable{Prices: map[string]Price{
		"H100 SXM": {USDPerGPUHour: 2.99, Low: 2.99, High: 6.00, Source: "Lambda on-demand H100 SXM (providers' range $2.99-$6.00, median $3.49), quoted in " + priceSource, Date: date},
		"MI300X":   {USDPerGPUHour: 1.85, Low: 1.50, High: 6.00, Source: "Vultr on-demand MI300X (providers' range $1.50-$6.00, median $1.99), quoted in " + priceSource, Date: date},
		"MI325X":   {USDPerGPUHour: 1.95, Source: "TensorWave MI325X, quoted in " + priceSource, Date: date},
	}}
}

// priceAliases are short names people type for the form factor Rival targets.
var priceAliases = map[string]string{"H100": "H100 SXM"}

// gpuTokens splits a GPU name into upper-case words without the vendor:
// "NVIDIA A100-SXM4-80GB" → [A100 SXM4 80GB].
func gpuTokens(s string) []string {
	f := strings.FieldsFunc(strings.ToUpper(s), func(r rune) bool { return r == ' ' || r == '_' || r == '-' })
	for len(f) > 0 && (f[0] == "NVIDIA" || f[0] == "AMD" || f[0] == "INSTINCT") {
		f = f[1:]
	}
	return f
}

// Lookup returns the price of a GPU as the results name it: the priced name
// whose words begin the GPU's name, the longest such ("H100 NVL" is not
// priced by "H100 SXM"; "NVIDIA A100-SXM4-80GB" is priced by "A100").
func (t PriceTable) Lookup(gpu string) (Price, bool) {
	if p, ok := t.Prices[gpu]; ok {
		return p, true
	}
	g := gpuTokens(gpu)
	best, bestLen := Price{}, 0
	for k, p := range t.Prices {
		kt := gpuTokens(k)
		if len(kt) == 0 || len(kt) > len(g) || len(kt) <= bestLen {
			continue
		}
		match := true
		for i := range kt {
			if kt[i] != g[i] {
				match = false
			}
		}
		if match {
			best, bestLen = p, len(kt)
		}
	}
	return best, bestLen > 0
}

// Models lists the priced GPU models, sorted.
func (t PriceTable) Models() []string {
	var out []string
	for k := range t.Prices {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// PriceAdvice says how to give prices for the PRICE_ keys: compare reads
// them from its environment (config.env does not take them).
func PriceAdvice(keys ...string) string {
	var set []string
	for _, k := range keys {
		set = append(set, k+"=<USD per GPU-hour>")
	}
	return "set " + strings.Join(set, " ") + " in compare's environment, e.g. " + keys[0] + "=2.99 go run mage.go compare (config.env does not take prices)"
}

// PriceKey is the PRICE_ setting that prices gpu: "PRICE_A100_SXM4_80GB".
func PriceKey(gpu string) string {
	return "PRICE_" + strings.Join(gpuTokens(gpu), "_")
}

// resolvePriceKey maps "H100" to "H100 SXM", and any other name to itself
// with underscores as spaces ("H100_NVL" → "H100 NVL", "CPU", "A100").
func resolvePriceKey(name string) (string, error) {
	t := gpuTokens(name)
	if len(t) == 0 {
		return "", fmt.Errorf("no GPU name after PRICE_: write PRICE_<GPU>, e.g. PRICE_H100=2.99 or PRICE_A100=1.29")
	}
	n := strings.Join(t, " ")
	if k, ok := priceAliases[n]; ok {
		return k, nil
	}
	return n, nil
}

// ParsePriceEnv overrides base with PRICE_<GPU>=<USD per GPU-hour> entries
// from env (KEY=VALUE strings, as os.Environ or a config file gives them);
// other keys are ignored. Any GPU name is accepted (A100, H100_NVL, CPU); a
// bad price is an error naming the entry.
func ParsePriceEnv(base PriceTable, env []string) (PriceTable, error) {
	out := PriceTable{Prices: map[string]Price{}, Warnings: append([]string(nil), base.Warnings...)}
	for k, v := range base.Prices {
		out.Prices[k] = v
	}
	for _, kv := range env {
		key, val, ok := strings.Cut(kv, "=")
		key = strings.TrimSpace(key)
		if !ok || !strings.HasPrefix(strings.ToUpper(key), "PRICE_") {
			continue
		}
		gpu, err := resolvePriceKey(key[len("PRICE_"):])
		if err != nil {
			return PriceTable{}, fmt.Errorf("%s: %w", key, err)
		}
		usd, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(val), "$"), 64)
		if err != nil || usd <= 0 || math.IsInf(usd, 0) || math.IsNaN(usd) {
			return PriceTable{}, fmt.Errorf("%s=%q: want a positive price in USD per GPU-hour, e.g. %s=2.99", key, val, key)
		}
		out.Prices[gpu] = Price{USDPerGPUHour: usd, Source: "set by " + key}
		if usd < PlausiblePriceLow || usd > PlausiblePriceHigh {
			out.Warnings = append(out.Warnings, fmt.Sprintf("implausible price: %s=%s is $%s per GPU-hour, outside the $%.2f–$%.0f any cloud lists; every cost figure of %s uses it: check the setting (USD per GPU-hour, e.g. %s=2.99)", key, strings.TrimSpace(val), num(usd, 2), PlausiblePriceLow, PlausiblePriceHigh, gpu, key))
		}
	}
	return out, nil
}
