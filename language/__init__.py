"""Causal language and pixel modelling: the decoder LM (`language.decoder`), adaptive input and
softmax (`language.adaptive`) and Hugging Face GPT-2 checkpoints (`language.gpt2`)."""
