package models

// Llama 3.1 8B: config.json and tokenizer_config.json of meta-llama/Llama-3.1-8B at HFRevision.
var llama31_8B = Family{
	Model: Model{
		Name: "llama", DisplayName: "Llama 3.1 8B",
		HFRepo: "meta-llama/Llama-3.1-8B", HFRevision: "d04e592bb4f6aa9cfee91e2e20afa771667e1d4b", Gated: true,
		Layers: 32, Hidden: 4096, FFN: 14336, Heads: 32, KVHeads: 8, Vocab: 128256,
		MaxPositions: 131072, RopeTheta: 500000, RopeScaling: &Llama3RopeScaling, NormEps: 1e-5, InitStd: 0.02,
		BOS: 128000, EOD: 128001, TokenizerKey: "llama",
		PrimusStock: "llama3.1_8B",
	},
	// Heads 4 keeps head_dim 64; the FFN is about 8/3 of hidden rounded to a multiple of 16.
	Proxy: ProxyShape{Layers: 2, Hidden: 256, FFN: 688, Heads: 4},
}
