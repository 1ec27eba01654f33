package models

// Mistral 7B v0.1: config.json and tokenizer_config.json of mistralai/Mistral-7B-v0.1 at HFRevision.
var mistral7B = Family{
	Model: Model{
		Name: "mistral", DisplayName: "Mistral 7B v0.1",
		HFRepo: "mistralai/Mistral-7B-v0.1", HFRevision: "27d67f1b5f57dc0953326b2601d68371d40ea8da",
		Layers: 32, Hidden: 4096, FFN: 14336, Heads: 32, KVHeads: 8, Vocab: 32000,
		MaxPositions: 32768, RopeTheta: 1e4, NormEps: 1e-5, InitStd: 0.02, SlidingWindow: 4096,
		BOS: 1, EOD: 2, TokenizerKey: "mistral",
		// Primus has no Megatron experiment for Mistral 7B; it shares Llama 3.1 8B's layer shapes, so
		// it starts from Llama's and every difference (tokenizer, rope base, positions, window) is an
		// override.
		PrimusStock: "llama3.1_8B",
	},
	Proxy: ProxyShape{Layers: 2, Hidden: 256, FFN: 688, Heads: 4},
}
