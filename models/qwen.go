package models

// Qwen 2.5 7B: config.json and tokenizer_config.json of Qwen/Qwen2.5-7B at HFRevision.
var qwen25_7B = Family{
	Model: Model{
		Name: "qwen", DisplayName: "Qwen 2.5 7B",
		HFRepo: "Qwen/Qwen2.5-7B", HFRevision: "d149729398750b98c0af14eb82c78cfe92750796",
		Layers: 28, Hidden: 3584, FFN: 18944, Heads: 28, KVHeads: 4, Vocab: 152064,
		MaxPositions: 131072, RopeTheta: 1e6, NormEps: 1e-6, InitStd: 0.02, QKVBias: true,
		BOS: -1, EOD: 151643, TokenizerKey: "qwen",
		PrimusStock: "qwen2.5_7B",
	},
	// Qwen's GQA ratio is 7, so its proxy has 7 query heads over 1 KV head to keep that ratio.
	Proxy: ProxyShape{Layers: 2, Hidden: 448, FFN: 1200, Heads: 7},
}
