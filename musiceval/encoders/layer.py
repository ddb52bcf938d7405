"""Mean pooling over one hidden layer of a transformers model: BERTScore's model as a text encoder.

BERTScore (Zhang et al. 2020) compares the token embeddings of one intermediate layer of its model
(layer 17 of roberta-large by default). To probe that model's musical knowledge with triplets, its
layer is mean-pooled over non-padding tokens and L2-normalised, the same pooling as the
sentence-transformers encoders (:mod:`musiceval.encoders.sentence`).

Specs:

- ``layer:<dir-or-hub-id>@<n>``: hidden layer ``n`` (0 = the embedding layer; the model's
  ``num_hidden_layers`` = the last layer, identical to ``st:<dir>``).
- ``bertscore:<model_type>[@<n>]``: as above, with BERTScore's default layer for ``model_type``
  (``bert_score.utils.model2layers``) when ``@<n>`` is omitted.
"""
from __future__ import annotations

from musiceval.encoders.base import register_encoder
from musiceval.encoders.sentence import MeanPoolingEncoder, masked_mean


class LayerMeanPoolingEncoder(MeanPoolingEncoder):
    """:class:`MeanPoolingEncoder` over hidden layer ``layer`` instead of the last one."""

    def __init__(self, name_or_path: str, layer: int, **kwargs):
        super().__init__(name_or_path, **kwargs)
        n_layers = self.model.config.num_hidden_layers
        if not 0 <= layer <= n_layers:
            raise ValueError(f"layer {layer} is out of range for {name_or_path!r}: it has layers 0..{n_layers}")
        self.layer = layer
        self.id = f"{self.id}@layer{layer}"

    def pool(self, enc):
        hidden = self.model(**enc, output_hidden_states=True).hidden_states[self.layer]
        return masked_mean(hidden, enc["attention_mask"])


def _split_layer(arg: str, prefix: str) -> tuple[str, int | None]:
    model, sep, layer = arg.rpartition("@")
    if not sep:
        return arg, None
    try:
        return model, int(layer)
    except ValueError:
        raise ValueError(f"encoder spec '{prefix}:{arg}': layer {layer!r} is not an integer; write {prefix}:<model>@<n>") from None


@register_encoder("layer")
def _load_layer(arg: str) -> LayerMeanPoolingEncoder:
    model, layer = _split_layer(arg, "layer")
    if not model or layer is None:
        raise ValueError(f"encoder spec 'layer:{arg}' needs a model and a layer: layer:<dir-or-hub-id>@<n>")
    return LayerMeanPoolingEncoder(model, layer)


@register_encoder("bertscore")
def _load_bertscore(arg: str) -> LayerMeanPoolingEncoder:
    model, layer = _split_layer(arg, "bertscore")
    if not model:
        raise ValueError("encoder spec 'bertscore:' needs a model type, e.g. bertscore:roberta-large")
    if layer is None:
        from bert_score.utils import model2layers

        if model not in model2layers:
            raise ValueError(
                f"BERTScore has no default layer for {model!r} (a local directory?); "
                f"name the layer: bertscore:{model}@<n>"
            )
        layer = model2layers[model]
    return LayerMeanPoolingEncoder(model, layer)
