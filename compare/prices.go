package compare

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/hw"
)

// Price is what one GPU-hour costs.
type Price struct {
	USDPerGPUHour float64
	Source        string // where the figure comes from
	Date          string // when it was read (YYYY-MM-DD)
}

// PriceTable maps spec-table GPU models ("H100 SXM", "MI300X") to prices.
type PriceTable struct {
	Prices map[string]Price
}

// priceSource is the public note the defaults were read from: it lists the
// providers' own on-demand list prices per GPU-hour.
const priceSource = "https://www.cliffcenter.com/research/amd-inference-economics"

// DefaultPrices are on-demand list prices per GPU-hour, as quoted on
// 2026-05-18 by the note at priceSource: Lambda's H100 SXM at $2.99, Vultr's
// MI300X at $1.85 and TensorWave's MI325X at $1.95. Prices move; override with
// PRICE_<GPU>=<USD per GPU-hour> (see ParsePriceEnv).
func DefaultPrices() PriceTable {
	const date = "2026-05-18"
	return PriceTable{Prices: map[string]Price{
		"H100 SXM": {USDPerGPUHour: 2.99, Source: "Lambda on-demand H100 SXM, quoted in " + priceSource, Date: date},
		"MI300X":   {USDPerGPUHour: 1.85, Source: "Vultr on-demand MI300X, quoted in " + priceSource, Date: date},
		"MI325X":   {USDPerGPUHour: 1.95, Source: "TensorWave MI325X, quoted in " + priceSource, Date: date},
	}}
}

// Lookup returns the price of a spec-table GPU model.
func (t PriceTable) Lookup(gpu string) (Price, bool) {
	p, ok := t.Prices[gpu]
	return p, ok
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

// priceAliases are short names people type for the form factor Rival targets.
var priceAliases = map[string]string{"H100": "H100 SXM"}

func normalizeGPU(s string) string {
	return strings.NewReplacer(" ", "", "_", "", "-", "").Replace(strings.ToUpper(s))
}

// resolvePriceKey maps "H100", "H100_SXM", "mi300x" to a spec-table key.
func resolvePriceKey(name string) (string, error) {
	n := normalizeGPU(name)
	for alias, key := range priceAliases {
		if normalizeGPU(alias) == n {
			return key, nil
		}
	}
	for _, k := range hw.SpecModels() {
		if normalizeGPU(k) == n {
			return k, nil
		}
	}
	var names []string
	for _, k := range hw.SpecModels() {
		names = append(names, "PRICE_"+strings.ReplaceAll(k, " ", "_"))
	}
	return "", fmt.Errorf("unknown GPU %q in a price setting: use one of %s (PRICE_H100 means H100 SXM)", name, strings.Join(names, ", "))
}

// ParsePriceEnv overrides base with PRICE_<GPU>=<USD per GPU-hour> entries
// from env (KEY=VALUE strings, as os.Environ or a config file gives them);
// other keys are ignored. A bad GPU name or price is an error naming the entry.
func ParsePriceEnv(base PriceTable, env []string) (PriceTable, error) {
	out := PriceTable{Prices: map[string]Price{}}
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
	}
	return out, nil
}
