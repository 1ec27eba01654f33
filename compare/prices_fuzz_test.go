package compare

import (
	"math"
	"strings"
	"testing"
)

// FuzzParsePriceEnv: any environment gives a price table or an error; a
// table that parses holds only finite prices that are not negative.
func FuzzParsePriceEnv(f *testing.F) {
	for _, s := range []string{"PRICE_H100=2.5", "PRICE_MI300X=NaN", "PRICE_H100=+Inf", "PRICE_H100 SXM=1\nPRICE_nope=3", "PRICE_=1", "PATH=/bin", "PRICE_H100=-1", "PRICE_H100=1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, env string) {
		table, err := ParsePriceEnv(DefaultPrices(), strings.Split(env, "\n"))
		if err != nil {
			return
		}
		for gpu, p := range table.Prices {
			if math.IsNaN(p.USDPerGPUHour) || math.IsInf(p.USDPerGPUHour, 0) || p.USDPerGPUHour < 0 {
				t.Fatalf("%q gave %s a price of %v", env, gpu, p.USDPerGPUHour)
			}
		}
	})
}
