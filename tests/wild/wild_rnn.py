"""Recurrent programs as users write them: a stacked LSTM (cuDNN's RNN kernels), a
bidirectional LSTM tagger over padded, packed sentences' embeddings, and a GRU
encoder in fp16.  Each build() returns (model_or_callable, example_inputs).
"""
import torch
import torch.nn as nn

DEV = "cuda"


class Forecaster(nn.Module):
    """A 2-layer LSTM over a time series, the last step's state to a prediction."""

    def __init__(self, features=8, hidden=64):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return self.head(out[:, -1])


class Tagger(nn.Module):
    """A part-of-speech tagger: embeddings, a bidirectional LSTM, tag scores."""

    def __init__(self, vocab=500, dim=32, hidden=64, tags=12):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=0)
        self.lstm = nn.LSTM(dim, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, tags)

    def forward(self, tokens):
        h, _ = self.lstm(self.embed(tokens))
        return torch.log_softmax(self.out(h), dim=-1)


class GruEncoder(nn.Module):
    def __init__(self, dim=32, hidden=64):
        super().__init__()
        self.gru = nn.GRU(dim, hidden, num_layers=2, batch_first=True)

    def forward(self, x):
        out, h = self.gru(x)
        return out, h


def lstm():
    return Forecaster().to(DEV).eval(), (torch.randn(4, 20, 8, device=DEV),)


def bilstm_tagger():
    tokens = torch.randint(1, 500, (2, 15), device=DEV)
    tokens[1, 10:] = 0  # the shorter sentence, padded
    return Tagger().to(DEV).eval(), (tokens,)


def gru_fp16():
    return GruEncoder().to(DEV).half().eval(), (torch.randn(2, 12, 32, device=DEV, dtype=torch.float16),)


PROGRAMS = {
    "rnn:lstm": lstm,
    "rnn:bilstm_tagger": bilstm_tagger,
    "rnn:gru_fp16": gru_fp16,
}
