"""The backbone the language domain registers with `attnbench.nn.backbones`: "decoder"
(`language.backbones.decoder`, registered when that module is imported, as
`language.models` does)."""
