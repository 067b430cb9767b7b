"""Shared embedding: the vectors two threads make together are the ones one thread makes."""

from __future__ import annotations

import threading

import numpy as np
import torch

from appliance.nlp.embedder import Embedder, SharedEmbedding, threads_split

TEXTS = [
    "Vancomycin trough levels are taken before the fourth dose.",
    "Patients with a penicillin allergy receive clarithromycin.",
    "Hand hygiene",
    "Sepsis six: oxygen, cultures, antibiotics, fluids, lactate and urine output "
    "within the first hour of recognition, escalated to the outreach team.",
] * 40


def test_two_threads_sharing_the_work_give_every_text_its_own_vector(
    embedder: Embedder,
) -> None:
    alone = embedder.embed(TEXTS)
    shared = SharedEmbedding(embedder, list(TEXTS))
    with threads_split(2):
        helper = threading.Thread(target=shared.run)
        helper.start()
        shared.run()
        helper.join()
    cosines = np.sum(alone * shared.vectors, axis=1)
    assert cosines.min() > 0.999  # every row filled, and with its own text's vector
    # a wrong row would be another text's vector: these differ by far more than that
    assert float(alone[0] @ alone[1]) < 0.9


def test_the_split_gives_each_thread_a_share_of_torch_threads_and_restores_them() -> None:
    before = torch.get_num_threads()
    with threads_split(2):
        assert torch.get_num_threads() == max(1, before // 2)
    assert torch.get_num_threads() == before


def test_no_chunks_is_no_work(embedder: Embedder) -> None:
    work = embedder.shared_work([])
    work.run()
    assert work.vectors.shape == (0, embedder.dimension)
