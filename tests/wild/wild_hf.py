"""transformers models from configs with tiny dimensions (hidden 64, 2 layers; random
weights, nothing downloaded), passed as users pass them: mostly the thin lambda that
turns pgcc's positional tensors into the model's keyword arguments and picks the
output a user wants (`lambda ids, mask: model(input_ids=ids, attention_mask=mask).logits`),
and some handed over as they are, returning a ModelOutput (with its cache object, where
the model makes one).  Architectures: BERT (with a padding mask), DistilBERT, RoBERTa,
GPT-NeoX, Mistral (sliding window), Qwen2 (left-padded batch), Mixtral (mixture of
experts, as it comes and in bf16 with the batched_mm experts backend), Llama, T5 and BART
(encoder-decoder), Whisper and Wav2Vec2 (speech), CLIP (text and vision towers, fp32 and
fp16).  Each build() returns (model_or_callable, example_inputs).
"""
import torch

DEV = "cuda"
VOCAB = 512
TINY = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)


def tokens(batch, length, low=3):
    return torch.randint(low, VOCAB, (batch, length), device=DEV)


def padding_mask(batch, length, lengths, left=False):
    """1 for tokens, 0 for padding: row i has lengths[i] tokens (right-padded, or left)."""
    mask = torch.zeros(batch, length, dtype=torch.long, device=DEV)
    for i, n in enumerate(lengths):
        if left:
            mask[i, length - n:] = 1
        else:
            mask[i, :n] = 1
    return mask


# ---- encoders ----

def bert_padding_mask():
    from transformers import BertConfig, BertForSequenceClassification
    model = BertForSequenceClassification(BertConfig(vocab_size=VOCAB, max_position_embeddings=64, num_labels=3,
                                                     **TINY)).cuda().eval()
    return (lambda ids, mask: model(input_ids=ids, attention_mask=mask).logits), \
        (tokens(2, 24), padding_mask(2, 24, [24, 13]))


def bert_as_is():
    """BertModel handed over as it is, positional (input_ids, attention_mask): it returns
    a BaseModelOutputWithPoolingAndCrossAttentions."""
    from transformers import BertConfig, BertModel
    model = BertModel(BertConfig(vocab_size=VOCAB, max_position_embeddings=64, **TINY)).cuda().eval()
    return model, (tokens(2, 16), padding_mask(2, 16, [16, 9]))


def distilbert():
    from transformers import DistilBertConfig, DistilBertForSequenceClassification
    config = DistilBertConfig(vocab_size=VOCAB, dim=64, n_layers=2, n_heads=4, hidden_dim=128,
                              max_position_embeddings=64, num_labels=2)
    model = DistilBertForSequenceClassification(config).cuda().eval()
    return (lambda ids, mask: model(input_ids=ids, attention_mask=mask).logits), \
        (tokens(2, 20), padding_mask(2, 20, [20, 11]))


def roberta_bf16():
    """RoBERTa in bf16: its position ids count the tokens that are not padding (id 1)."""
    from transformers import RobertaConfig, RobertaModel
    model = RobertaModel(RobertaConfig(vocab_size=VOCAB, max_position_embeddings=66, pad_token_id=1, **TINY))
    model = model.cuda().eval().to(torch.bfloat16)
    x, mask = tokens(2, 16), padding_mask(2, 16, [16, 10])
    x[1, 10:] = 1  # the padding token
    return (lambda ids, mask: model(input_ids=ids, attention_mask=mask).last_hidden_state), (x, mask)


# ---- decoders ----

def gpt_neox_fp16():
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM
    model = GPTNeoXForCausalLM(GPTNeoXConfig(vocab_size=VOCAB, max_position_embeddings=128, **TINY))
    model = model.cuda().eval().half()
    return (lambda ids: model(input_ids=ids).logits), (tokens(1, 32),)


def mistral_sliding_window():
    """Mistral with a sliding window shorter than the prompt."""
    from transformers import MistralConfig, MistralForCausalLM
    config = MistralConfig(vocab_size=VOCAB, max_position_embeddings=128, num_key_value_heads=2, sliding_window=16,
                           **TINY)
    model = MistralForCausalLM(config).cuda().eval()
    return (lambda ids: model(input_ids=ids).logits), (tokens(1, 32),)


def qwen2_bf16_left_padded():
    """Qwen2 in bf16 on a batch of two prompts, the shorter left-padded (as generate()
    batches them)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM
    config = Qwen2Config(vocab_size=VOCAB, max_position_embeddings=128, num_key_value_heads=2, **TINY)
    model = Qwen2ForCausalLM(config).cuda().eval().to(torch.bfloat16)
    return (lambda ids, mask: model(input_ids=ids, attention_mask=mask).logits), \
        (tokens(2, 20), padding_mask(2, 20, [20, 12], left=True))


def mixtral_moe():
    """Mixtral: 4 experts, 2 per token (the router picks them on the device)."""
    from transformers import MixtralConfig, MixtralForCausalLM
    config = MixtralConfig(vocab_size=VOCAB, max_position_embeddings=128, num_key_value_heads=2,
                           num_local_experts=4, num_experts_per_tok=2, **TINY)
    model = MixtralForCausalLM(config).cuda().eval()
    return (lambda ids: model(input_ids=ids).logits), (tokens(1, 16),)


def mixtral_bf16_batched_mm():
    """Mixtral in bf16 with the experts backend transformers' docs give for CUDA graphs and
    small batches ("batched_mm": each token's chosen experts' weights gathered, one batched
    GEMM, no host read), as a deployment would set it."""
    from transformers import MixtralConfig, MixtralForCausalLM
    config = MixtralConfig(vocab_size=VOCAB, max_position_embeddings=128, num_key_value_heads=2,
                           num_local_experts=4, num_experts_per_tok=2, **TINY)
    model = MixtralForCausalLM(config).cuda().eval().to(torch.bfloat16)
    model.set_experts_implementation("batched_mm")
    return (lambda ids: model(input_ids=ids).logits), (tokens(2, 16),)


def llama_as_is():
    """LlamaForCausalLM handed over as it is, on (input_ids,): it returns a
    CausalLMOutputWithPast, logits and a fresh KV cache."""
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(vocab_size=VOCAB, max_position_embeddings=128, num_key_value_heads=2, **TINY)
    return LlamaForCausalLM(config).cuda().eval(), (tokens(1, 24),)


# ---- encoder-decoders ----

def t5():
    from transformers import T5Config, T5ForConditionalGeneration
    config = T5Config(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2,
                      num_heads=4, decoder_start_token_id=0, pad_token_id=0)
    model = T5ForConditionalGeneration(config).cuda().eval()
    return (lambda ids, mask, dec: model(input_ids=ids, attention_mask=mask, decoder_input_ids=dec).logits), \
        (tokens(2, 16), padding_mask(2, 16, [16, 9]), tokens(2, 8))


def bart_model_output():
    """BART through a lambda that returns the Seq2SeqLMOutput whole (logits, the cache,
    the encoder's last hidden state)."""
    from transformers import BartConfig, BartForConditionalGeneration
    config = BartConfig(vocab_size=VOCAB, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128,
                        max_position_embeddings=64)
    model = BartForConditionalGeneration(config).cuda().eval()
    return (lambda ids, mask, dec: model(input_ids=ids, attention_mask=mask, decoder_input_ids=dec)), \
        (tokens(2, 16), padding_mask(2, 16, [16, 12]), tokens(2, 8))


# ---- speech ----

def whisper():
    """Whisper's encoder on 16 mel bins x 64 frames and its decoder on 8 tokens."""
    from transformers import WhisperConfig, WhisperModel
    config = WhisperConfig(vocab_size=VOCAB, num_mel_bins=16, d_model=64, encoder_layers=2, decoder_layers=2,
                           encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                           decoder_ffn_dim=128, max_source_positions=32, max_target_positions=32,
                           pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    model = WhisperModel(config).cuda().eval()
    feats = torch.randn(1, 16, 64, device=DEV)
    return (lambda feats, dec: model(input_features=feats, decoder_input_ids=dec).last_hidden_state), \
        (feats, tokens(1, 8))


def wav2vec2():
    """Wav2Vec2's convolutional feature encoder (2 layers) and transformer on raw audio."""
    from transformers import Wav2Vec2Config, Wav2Vec2Model
    config = Wav2Vec2Config(vocab_size=32, conv_dim=(32, 32), conv_stride=(5, 2), conv_kernel=(10, 3),
                            num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, **TINY)
    model = Wav2Vec2Model(config).cuda().eval()
    return (lambda wav: model(wav).last_hidden_state), (torch.randn(2, 1600, device=DEV),)


# ---- two towers ----

def clip():
    """CLIP: a text and a vision tower, the similarity logits between 2 captions and 2 images."""
    from transformers import CLIPConfig, CLIPModel
    config = CLIPConfig(text_config=dict(vocab_size=VOCAB, max_position_embeddings=32, **TINY),
                        vision_config=dict(image_size=32, patch_size=8, **TINY), projection_dim=32)
    model = CLIPModel(config).cuda().eval()
    return (lambda ids, pixels, mask: model(input_ids=ids, pixel_values=pixels, attention_mask=mask).logits_per_image), \
        (tokens(2, 12), torch.randn(2, 3, 32, 32, device=DEV), padding_mask(2, 12, [12, 7]))


def clip_fp16():
    """CLIP in fp16, both towers: the image-text similarity logits."""
    from transformers import CLIPConfig, CLIPModel
    config = CLIPConfig(text_config=dict(vocab_size=VOCAB, max_position_embeddings=32, **TINY),
                        vision_config=dict(image_size=32, patch_size=8, **TINY), projection_dim=32)
    model = CLIPModel(config).cuda().eval().half()
    return (lambda ids, pixels, mask: model(input_ids=ids, pixel_values=pixels, attention_mask=mask).logits_per_image), \
        (tokens(2, 12), torch.randn(2, 3, 32, 32, device=DEV, dtype=torch.float16), padding_mask(2, 12, [12, 7]))


PROGRAMS = {
    "hf:bert_padding_mask": bert_padding_mask,
    "hf:bert_as_is": bert_as_is,
    "hf:distilbert": distilbert,
    "hf:roberta_bf16": roberta_bf16,
    "hf:gpt_neox_fp16": gpt_neox_fp16,
    "hf:mistral_sliding_window": mistral_sliding_window,
    "hf:qwen2_bf16_left_padded": qwen2_bf16_left_padded,
    "hf:mixtral_moe": mixtral_moe,
    "hf:mixtral_bf16_batched_mm": mixtral_bf16_batched_mm,
    "hf:llama_as_is": llama_as_is,
    "hf:t5": t5,
    "hf:bart_model_output": bart_model_output,
    "hf:whisper": whisper,
    "hf:wav2vec2": wav2vec2,
    "hf:clip": clip,
    "hf:clip_fp16": clip_fp16,
}
