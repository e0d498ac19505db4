"""A message keeps its content's token count as the run's tokenizer made it, under that count's
key (harness.tokens.Tokenizer.counts_key): the inspector's first look at a long session takes it
instead of counting every message again. Both nullable or empty: rows no run counted, and every
row before this."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0007_turn_writes'),
    ]

    operations = [
        migrations.AddField(
            model_name='message',
            name='content_tokens',
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='message',
            name='tokens_counter',
            field=models.CharField(blank=True, default='', max_length=100),
        ),
    ]
