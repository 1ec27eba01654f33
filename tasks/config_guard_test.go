package tasks

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Values that would reach a launch unchecked are refused, naming the key.
func TestConfigRefusesNonFiniteAndOverflowingValues(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"LR": "NaN"}, "config LR (from environment): NaN is not a finite number"},
		{map[string]string{"MIN_LR": "+Inf"}, "config MIN_LR (from environment): +Inf is not a finite number"},
		{map[string]string{"WEIGHT_DECAY": "-inf"}, "is not a finite number"},
		{map[string]string{"TRAIN_SPLIT": "NaN"}, "config TRAIN_SPLIT (from environment): NaN is not a finite number"},
		{map[string]string{"MBS": "9223372036854775807", "DP": "2", "GA": "1"}, "MBS×DP×GA overflows"},
		{map[string]string{"MBS": "4294967296", "DP": "4294967296", "GA": "1"}, "MBS×DP×GA overflows"},
		{map[string]string{"TRAIN_TIMEOUT": "0"}, "config TRAIN_TIMEOUT (from environment): 0 is no limit at all"},
		{map[string]string{"TRAIN_TIMEOUT": "0s"}, "is no limit at all"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			_, err := loadConfig(filepath.Join(t.TempDir(), "none.env"), "", envFrom(tc.env))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// config.env lines: a stray token or a foreign file is never echoed; a BOM,
// a quoted value with a comment are read; a duplicated key is an error.
func TestConfigFileLines(t *testing.T) {
	p := writeFile(t, "config.env", "SL=1024\nhf_AbCdEfSECRETtoken\n")
	_, err := loadConfig(p, "", envFrom(nil))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "config.env:2: expected KEY=VALUE")
	assert.NotContains(t, err.Error(), "SECRET")

	p = writeFile(t, "passwd", "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/usr/sbin/nologin\n")
	_, err = loadConfig(p, "", envFrom(nil))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "root:x")

	p = writeFile(t, "config.env", "hf_tok=SECRETvalue\n")
	_, err = loadConfig(p, "", envFrom(nil))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "SECRET")
	assert.NotContains(t, err.Error(), "hf_tok", "a key that is no configuration name is not echoed either")

	p = writeFile(t, "config.env", "\ufeffSL=4096\n")
	c, err := loadConfig(p, "", envFrom(nil))
	require.NoError(t, err, "a UTF-8 byte-order mark is skipped")
	assert.Equal(t, 4096, c.int("SL"))

	p = writeFile(t, "config.env", "SL=\"4096\" # the long context\nLR='1e-4'   # quoted too\n")
	c, err = loadConfig(p, "", envFrom(nil))
	require.NoError(t, err)
	assert.Equal(t, 4096, c.int("SL"))
	assert.Equal(t, 1e-4, c.float("LR"))

	p = writeFile(t, "config.env", "SL=\"4096\" trailing\n")
	_, err = loadConfig(p, "", envFrom(nil))
	require.ErrorContains(t, err, "config.env:1: SL: text after the closing quote")

	p = writeFile(t, "config.env", "SL=1024\nMBS=2\nSL=4096\n")
	_, err = loadConfig(p, "", envFrom(nil))
	require.ErrorContains(t, err, "config.env:3: SL is already set on line 1")
}
